// mailboxes.js: a domain's mailboxes: create, password, quota with a
// usage bar, the Sieve filter, delete.

import { h, field, bar, fmt } from "./dom.js";
import { ApiError, call, get, post, put, del, seg } from "./api.js";
import { onSubmit, button, pager, pageQuery, domainHeader, section } from "./ui.js";

// page is #/domains/{name}/mailboxes.
export async function page(ctx, name) {
  const { domain: d, el: head } = await domainHeader(ctx, name, "/mailboxes");
  const { body: ms, total } = await call("GET", `/users/?domain_id=${d.id}&${pageQuery(ctx)}`);
  // One usage call per mailbox of the page, at once: the API has no
  // list of usages, and a page is 25 at most, well within the key's burst.
  const usages = await Promise.all(ms.map((m) => get("/users/" + seg(m.email) + "/usage")));

  const local = field("Address", { type: "text", required: true, placeholder: "alice", id: "new-local", spellcheck: "false", autocomplete: "off" });
  const pw = field("Password (8 characters at least)", { type: "password", required: true, minlength: 8, id: "new-password", autocomplete: "new-password" });
  const form = onSubmit(ctx, h("form", { class: "inline", id: "create-mailbox" },
    h("div", { class: "address" }, local, h("span", { class: "at" }, "@" + d.name)), pw,
    h("button", { type: "submit" }, "Add mailbox")),
  async () => {
    const m = await post("/users/", { domain_name: d.name, email: `${local.input.value.trim()}@${d.name}`, password: pw.input.value });
    return `Mailbox ${m.email} added`;
  });

  const limitText = d.max_mailboxes ? ` of ${fmt(d.max_mailboxes)} allowed` : "";
  return h("div", {}, head,
    section("Add a mailbox", form,
      h("p", { class: "note" }, `New mailboxes get the domain's quota, ${fmt(d.quota_mb)} MB. The password logs in over IMAP, SMTP submission and ManageSieve.`)),
    section(`Mailboxes (${total}${limitText})`,
      ms.length === 0 ? h("p", {}, "No mailbox yet.") :
        h("ul", { class: "rows", id: "mailboxes" }, ms.map((m, i) => row(ctx, m, usages[i]))),
      pager(ctx, total)));
}

// row is one mailbox: its usage bar and its forms.
function row(ctx, m, u) {
  const path = "/users/" + seg(m.email);
  const quota = field("Quota, MB", { type: "number", min: 1, value: u.quota_mb, required: true, class: "quota" });
  const quotaForm = onSubmit(ctx, h("form", { class: "inline compact quota-form" }, quota, h("button", { type: "submit" }, "Set quota")),
    async () => { await put(path + "/quota", { quota_mb: Number(quota.input.value) }); return `Quota of ${m.email} set`; });
  const pw = field("New password", { type: "password", minlength: 8, required: true, autocomplete: "new-password" });
  const pwForm = onSubmit(ctx, h("form", { class: "inline compact" }, pw, h("button", { type: "submit" }, "Set password")),
    async () => { await put(path, { password: pw.input.value }); return `Password of ${m.email} changed`; });
  return h("li", { class: "row", "data-email": m.email },
    h("div", { class: "row-head" },
      h("strong", {}, m.email),
      h("span", { class: "note" }, `${fmt(u.message_count)} messages · last login ${u.last_login ? u.last_login.replace("T", " ") : "never"}`),
      h("a", { href: `#/domains/${seg(m.email.split("@")[1])}/mailboxes/${seg(m.email)}/autoreply`, class: "autoreply-link" }, "Auto-reply")),
    bar(u.storage_used_mb, u.quota_mb, "MB"),
    h("div", { class: "row-forms" }, quotaForm, pwForm,
      button(ctx, "Delete", async () => {
        if (!confirm(`Delete ${m.email} and all its messages?`)) return;
        await del(path);
        return `Mailbox ${m.email} deleted`;
      }, { class: "danger small" })),
    sieve(ctx, m, path));
}

// sieve is the mailbox's active Sieve filter in a plain editor, fetched
// when opened (a page of mailboxes would otherwise cost a call each). A
// script that does not parse is refused by the API with its line and
// column, shown under the editor.
function sieve(ctx, m, path) {
  const text = h("textarea", { class: "sieve-script", rows: 8, spellcheck: "false", autocomplete: "off", "aria-label": `Sieve filter of ${m.email}` });
  const state = h("span", { class: "note" });
  const form = onSubmit(ctx, h("form", { class: "sieve-form" }, text,
    h("div", { class: "sieve-buttons" },
      h("button", { type: "submit" }, "Save filter"),
      button(ctx, "Remove filter", async () => {
        if (!confirm(`Remove the Sieve filter of ${m.email}?`)) return;
        await del(path + "/sieve");
        return `Sieve filter of ${m.email} removed`;
      }, { class: "danger small" }),
      state)),
  async () => {
    await put(path + "/sieve", { script: text.value });
    return `Sieve filter of ${m.email} saved`;
  });
  const box = h("details", { class: "sieve" }, h("summary", {}, "Sieve filter"), form);
  let loaded = false;
  box.addEventListener("toggle", async () => {
    if (!box.open || loaded) return;
    loaded = true;
    state.textContent = "Loading…";
    try {
      text.value = (await get(path + "/sieve")).script;
      state.textContent = "Active; mail clients may also edit it over ManageSieve (port 4190).";
    } catch (x) {
      if (!(x instanceof ApiError) || x.status !== 404) {
        loaded = false;
        state.textContent = String(x.message);
        return;
      }
      state.textContent = "No filter: all mail goes to the inbox.";
    }
  });
  return box;
}
