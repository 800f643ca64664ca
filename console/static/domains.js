// domains.js: the list of domains, a domain's settings (plan, limits,
// retention, transfer cap, spam filter, suspension) and the DNS records
// to publish.

import { h, field, copyButton, fmt } from "./dom.js";
import { call, get, post, put, del, seg } from "./api.js";
import { onSubmit, button, pager, pageQuery, domainHeader, badges, section, toast } from "./ui.js";

// plans are fetched once per page load: they come from the configuration.
let plans;
async function planNames() {
  plans = plans || (await get("/plans"));
  return plans;
}

function planSelect(selected) {
  return h("select", { "aria-label": "Plan" },
    plans.map((p) => h("option", { value: p.name, selected: p.name === selected },
      `${p.name}: ${fmt(p.quota_mb)} MB a mailbox, ${p.retention_days} days, ${fmt(p.transfer_monthly_mb)} MB a month`)));
}

// list is #/domains.
export async function list(ctx) {
  const [{ body: ds, total }] = await Promise.all([call("GET", "/domains/?" + pageQuery(ctx)), planNames()]);
  const name = field("Domain name", { type: "text", required: true, placeholder: "example.com", id: "new-domain", spellcheck: "false" });
  const plan = planSelect("starter");
  const form = h("form", { class: "inline", id: "create-domain" }, name,
    h("label", { class: "field" }, h("span", {}, "Plan"), plan), h("button", { type: "submit" }, "Add domain"));
  onSubmit(ctx, form, async () => {
    const d = await post("/domains/", { name: name.input.value.trim(), plan: plan.value });
    location.hash = "#/domains/" + seg(d.name);
    return `Domain ${d.name} added`;
  });
  return h("div", {},
    h("h1", {}, "Domains"),
    section("Add a domain", form,
      h("p", { class: "note" }, "Then publish its DNS records (the DNS tab) and check its ownership.")),
    section("Your domains",
      ds.length === 0 ? h("p", {}, "No domain yet.") :
        h("table", { class: "list", id: "domains" },
          h("thead", {}, h("tr", {}, ["Domain", "Plan", "Mailbox quota", "Limits", "State", "Created"].map((t) => h("th", {}, t)))),
          h("tbody", {}, ds.map((d) => h("tr", {},
            h("td", {}, h("a", { href: "#/domains/" + seg(d.name) }, d.name)),
            h("td", {}, d.plan),
            h("td", {}, fmt(d.quota_mb) + " MB"),
            h("td", {}, `${limit(d.max_mailboxes)} mailboxes, ${limit(d.max_aliases)} aliases`),
            h("td", {}, badges(d)),
            h("td", {}, d.created_at.replace("T", " ")))))),
      pager(ctx, total)));
}

const limit = (n) => (n === 0 ? "unlimited" : fmt(n));

// settings is #/domains/{name}.
export async function settings(ctx, name) {
  const [{ domain: d, el: head }, , sp] = await Promise.all([
    domainHeader(ctx, name, ""), planNames(), get("/domains/" + seg(name) + "/spam")]);
  const path = "/domains/" + seg(d.name);

  const plan = planSelect(d.plan);
  const planForm = onSubmit(ctx, h("form", { class: "inline", id: "plan-form" },
    h("label", { class: "field" }, h("span", {}, "Plan"), plan), h("button", { type: "submit" }, "Apply plan")),
  async () => { await put(path + "/plan", { plan: plan.value }); return "Plan applied"; });

  const maxM = field("Max mailboxes (0: unlimited)", { type: "number", min: 0, value: d.max_mailboxes, required: true });
  const maxA = field("Max aliases (0: unlimited)", { type: "number", min: 0, value: d.max_aliases, required: true });
  const limitsForm = onSubmit(ctx, h("form", { class: "inline" }, maxM, maxA, h("button", { type: "submit" }, "Set limits")),
    async () => {
      await put(path + "/limits", { max_mailboxes: Number(maxM.input.value), max_aliases: Number(maxA.input.value) });
      return "Limits set";
    });

  const ret = field("Retention, days", { type: "number", min: 1, value: d.retention_days, required: true });
  const retForm = onSubmit(ctx, h("form", { class: "inline" }, ret, h("button", { type: "submit" }, "Set retention")),
    async () => { await put(path + "/retention", { retention_days: Number(ret.input.value) }); return "Retention set"; });

  const cap = field("Monthly transfer cap, MB", { type: "number", min: 1, value: d.transfer_monthly_mb, required: true });
  const capForm = onSubmit(ctx, h("form", { class: "inline" }, cap, h("button", { type: "submit" }, "Set cap")),
    async () => { await put(path + "/transfer", { transfer_monthly_mb: Number(cap.input.value) }); return "Transfer cap set"; });

  return h("div", {}, head,
    section("Plan",
      h("p", {}, `Plan ${d.plan}: ${fmt(d.quota_mb)} MB for each new mailbox, messages kept ${d.retention_days} days, ${fmt(d.transfer_monthly_mb)} MB of transfer a month.`),
      planForm,
      h("p", { class: "note" }, "Applying a plan sets the retention, the transfer cap and the quota of every mailbox of the domain at once.")),
    section("Limits", limitsForm, retForm, capForm),
    spamSection(ctx, path, sp),
    section(d.suspended ? "Suspended" : "Suspension",
      h("p", {}, d.suspended
        ? "The domain is suspended: its mailboxes cannot log in or send; mail to it is still received."
        : "Suspending stops logins and sending for every mailbox of the domain; mail to it is still received."),
      d.suspended
        ? button(ctx, "Resume domain", async () => { await post(path + "/resume"); return "Domain resumed"; }, { id: "resume" })
        : button(ctx, "Suspend domain", async () => {
          if (!confirm(`Suspend ${d.name}?`)) return;
          await post(path + "/suspend");
          return "Domain suspended";
        }, { id: "suspend", class: "danger" })),
    section("Delete",
      h("p", {}, "A domain can be deleted once it has no mailbox and no alias left."),
      button(ctx, "Delete domain", async () => {
        if (!confirm(`Delete ${d.name}? This cannot be undone.`)) return;
        await del(path);
        location.hash = "#/domains";
        return "Domain deleted";
      }, { class: "danger" })));
}

// spamFilters are the filters the API takes, with what each does.
const spamFilters = [
  ["off", "Off: nothing is filtered"],
  ["junk", "Junk: spam, even what the filter would reject, goes to the Junk folder"],
  ["reject", "Reject: what the filter rejects is refused (550 5.7.1), other spam goes to Junk"],
];

// spamSection is the domain's spam filter: its own, or the server's
// default ("" in the select, null to the API).
function spamSection(ctx, path, sp) {
  const select = h("select", { "aria-label": "Spam filter", id: "spam-filter" },
    h("option", { value: "", selected: sp.default }, "The server's default" + (sp.default ? ` (now ${sp.filter})` : "")),
    spamFilters.map(([v, label]) => h("option", { value: v, selected: !sp.default && sp.filter === v }, label)));
  const form = onSubmit(ctx, h("form", { class: "inline", id: "spam-form" },
    h("label", { class: "field" }, h("span", {}, "Spam filter"), select), h("button", { type: "submit" }, "Set filter")),
  async () => {
    await put(path + "/spam", { filter: select.value || null });
    return "Spam filter set";
  });
  return section("Spam filter",
    h("p", { id: "spam-state" }, `In force: ${sp.filter}, `, sp.default ? "the server's default." : "this domain's own setting."),
    form,
    h("p", { class: "note" }, "With junk or reject, mail the filter would rather see again later (soft reject, greylisting) is answered 451 4.7.1, so that its sender retries. ",
      "The server's default is the operator's spam_filter setting."));
}

// dns is #/domains/{name}/dns: the records with copy buttons, and the
// ownership check. The API checks ownership only (POST .../verify looks
// for the _mailhost TXT record or an MX record pointing here); it has no
// route that looks up the other records, and the console adds nothing
// the API lacks, so those are listed to copy, not checked.
export async function dns(ctx, name) {
  const [{ domain: d, el: head }, rs] = await Promise.all([
    domainHeader(ctx, name, "/dns"), get("/domains/" + seg(name) + "/dns")]);
  const result = h("p", { id: "verify-result", role: "status" });
  const check = h("button", { type: "button", id: "verify" }, "Check ownership now");
  check.addEventListener("click", async () => {
    check.disabled = true;
    result.className = "";
    result.textContent = "Looking the records up…";
    try {
      await post("/domains/" + seg(d.name) + "/verify");
      result.className = "ok";
      result.textContent = "Verified: the ownership record was found in DNS.";
      toast("Domain verified");
      setTimeout(ctx.refresh, 1200);
    } catch (err) {
      result.className = "error";
      result.textContent = err.message;
    } finally {
      check.disabled = false;
    }
  });
  const checked = (r) => r.name.startsWith("_mailhost.") || r.type === "MX";
  const zone = rs.records.map(zoneLine).join("\n");
  return h("div", {}, head,
    section("Ownership",
      h("p", {}, d.verified
        ? "Verified: DNS shows that this domain is hosted here. It is checked again every day."
        : "Not verified yet. Publish the _mailhost TXT record (or point the MX record here), then check."),
      h("p", {}, check), result),
    section("Records to publish",
      h("p", { class: "note" },
        "Only the ownership proof (the _mailhost TXT record, or the MX record) is checked live, by the button above. ",
        "The API has no check of the other records: copy them to your DNS provider and check them there."),
      h("table", { class: "list dns", id: "dns" },
        h("thead", {}, h("tr", {}, ["Type", "Name", "Value", "", "Purpose", "Live check"].map((t) => h("th", {}, t)))),
        h("tbody", {}, rs.records.map((r) => h("tr", {},
          h("td", {}, r.type),
          h("td", {}, h("code", {}, r.name), " ", copyButton(r.name, r.type + " name")),
          h("td", { class: "value" }, h("code", {}, value(r))),
          h("td", {}, copyButton(value(r), r.type + " value")),
          h("td", {}, r.purpose),
          h("td", {}, checked(r) ? "by Check ownership" : "none in the API"))))),
      h("p", {}, copyButton(zone, "all records as a zone file"), " all records as zone-file lines")));
}

// value is what a DNS provider's form asks for: the priority, weight and
// port of MX and SRV come before the target.
function value(r) {
  if (r.type === "SRV") return `${r.priority} ${r.weight} ${r.port} ${r.value}`;
  if (r.type === "MX") return `${r.priority} ${r.value}`;
  return r.value;
}

// zoneLine is r as a line of a zone file: targets fully qualified, a TXT
// text split into quoted strings of at most 255 bytes (RFC 1035 section
// 3.3.14); the texts mailhost makes are ASCII.
function zoneLine(r) {
  const v = r.type === "TXT"
    ? (r.value.match(/.{1,255}/g) || [""]).map((p) => `"${p.replace(/["\\]/g, "\\$&")}"`).join(" ")
    : value(r) + ".";
  return `${r.name}. 3600 IN ${r.type} ${v}`;
}
