// audit.js: the partner's audit log, newest first, a page at a time. The
// API pages it (limit, offset, X-Total-Count) but has no filter, so the
// filter here narrows the page shown, and says so.

import { h, field } from "./dom.js";
import { call } from "./api.js";
import { pager, pageQuery, section } from "./ui.js";

// query is the filter's text, kept while paging so that each page shown
// is narrowed the same way.
let query = "";

// page is #/audit.
export async function page(ctx) {
  const { body: es, total } = await call("GET", "/audit/?" + pageQuery(ctx));

  const rows = es.map((e) => h("tr", {},
    h("td", {}, e.time.replace("T", " ")),
    h("td", {}, who(e)),
    h("td", {}, e.method),
    h("td", {}, h("code", {}, e.route)),
    h("td", {}, e.object),
    h("td", {}, h("span", { class: "badge" + (e.status >= 400 ? " bad" : e.status < 300 ? " good" : "") }, String(e.status)))));
  // What the filter matches: the row's text as shown.
  const texts = rows.map((r) => r.textContent.toLowerCase());

  const filter = field("Filter this page", { type: "search", id: "audit-filter", value: query, placeholder: "route, object, method, status", spellcheck: "false", autocomplete: "off" });
  filter.classList.add("wide");
  const shown = h("p", { class: "note", id: "audit-shown", role: "status" });
  const apply = () => {
    query = filter.input.value;
    const q = query.trim().toLowerCase();
    let n = 0;
    rows.forEach((r, i) => {
      r.hidden = q !== "" && !texts[i].includes(q);
      if (!r.hidden) n++;
    });
    shown.textContent = q === "" ? "" : `${n} of the ${rows.length} entries of this page match.`;
  };
  filter.input.addEventListener("input", apply);
  apply();
  // Enter in the field would submit the form, which the policy forbids.
  const form = h("form", { class: "inline", id: "audit-filter-form", onsubmit: (e) => e.preventDefault() }, filter);

  return h("div", {},
    h("h1", {}, "Audit log"),
    section(`Changes (${total})`,
      h("p", { class: "note" },
        "Every change made through the API with any of your keys, and the operator's command-line changes to your account, newest first. ",
        "Times are UTC; a key is shown by its prefix, never whole."),
      es.length > 0 && form,
      es.length > 0 && h("p", { class: "note" },
        "The API has no search: the filter narrows the entries of the page shown, not the whole log. Page through to look further back."),
      shown,
      es.length === 0 ? h("p", {}, "No change recorded yet.") :
        h("table", { class: "list", id: "audit" },
          h("thead", {}, h("tr", {}, ["Time", "By", "Method", "Route", "Object", "Status"].map((t) => h("th", {}, t)))),
          h("tbody", {}, rows)),
      pager(ctx, total)));
}

// who says what made a change: a key (its prefix), the command line, or
// the server on its own.
function who(e) {
  if (e.method === "SERVER") return "the server";
  if (e.key_prefix) return h("code", {}, e.key_prefix);
  return "command line";
}
