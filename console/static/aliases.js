// aliases.js: a domain's aliases and its catch-all.

import { h, field } from "./dom.js";
import { call, post, del, seg } from "./api.js";
import { onSubmit, button, pager, pageQuery, domainHeader, section } from "./ui.js";

// page is #/domains/{name}/aliases.
export async function page(ctx, name) {
  const { domain: d, el: head } = await domainHeader(ctx, name, "/aliases");
  const { body: as, total } = await call("GET", `/aliases/?domain_id=${d.id}&${pageQuery(ctx)}`);

  const local = field("Source address", { type: "text", placeholder: "sales", id: "alias-local", spellcheck: "false", autocomplete: "off" });
  const catchAll = h("input", { type: "checkbox", id: "alias-catchall" });
  catchAll.addEventListener("change", () => {
    local.input.disabled = catchAll.checked;
    local.input.required = !catchAll.checked;
  });
  local.input.required = true;
  const dest = field("Destination", { type: "email", required: true, placeholder: "alice@" + d.name, id: "alias-dest", spellcheck: "false" });
  const form = onSubmit(ctx, h("form", { class: "inline", id: "create-alias" },
    h("div", { class: "address" }, local, h("span", { class: "at" }, "@" + d.name)),
    h("label", { class: "check" }, catchAll, " catch-all (every other address)"),
    dest, h("button", { type: "submit" }, "Add alias")),
  async () => {
    const source = catchAll.checked ? "@" + d.name : `${local.input.value.trim()}@${d.name}`;
    const a = await post("/aliases/", { domain_name: d.name, source, destination: dest.input.value.trim() });
    return `Alias ${a.source} added`;
  });

  return h("div", {}, head,
    section("Add an alias", form,
      h("p", { class: "note" }, "An alias forwards mail for its source to its destination, which may be anywhere. ",
        "The catch-all takes mail for every address of the domain that is neither a mailbox nor an alias.")),
    section(`Aliases (${total})`,
      as.length === 0 ? h("p", {}, "No alias yet.") :
        h("table", { class: "list", id: "aliases" },
          h("thead", {}, h("tr", {}, ["Source", "Destination", "Created", ""].map((t) => h("th", {}, t)))),
          h("tbody", {}, as.map((a) => h("tr", {},
            h("td", {}, a.source, a.source.startsWith("@") && h("span", { class: "badge" }, "catch-all")),
            h("td", {}, a.destination),
            h("td", {}, a.created_at.replace("T", " ")),
            h("td", {}, button(ctx, "Delete", async () => {
              if (!confirm(`Delete the alias ${a.source}?`)) return;
              await del("/aliases/" + seg(a.source));
              return `Alias ${a.source} deleted`;
            }, { class: "danger small" })))))),
      pager(ctx, total)));
}
