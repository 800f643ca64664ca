// autoreply.js: one mailbox's auto-reply (vacation notice): on or off,
// subject, text, and the optional start and end, in UTC as the API has
// them.

import { h, field } from "./dom.js";
import { get, put, del, seg } from "./api.js";
import { onSubmit, button, domainHeader, section } from "./ui.js";

// page is #/domains/{name}/mailboxes/{email}/autoreply.
export async function page(ctx, name, email) {
  const path = "/users/" + seg(email) + "/autoreply";
  const [{ domain: d, el: head }, ar] = await Promise.all([domainHeader(ctx, name, "/mailboxes"), get(path)]);

  const enabled = h("input", { type: "checkbox", id: "ar-enabled", checked: ar.enabled });
  const subject = field("Subject", { type: "text", required: true, maxlength: 989, value: ar.subject, id: "ar-subject", placeholder: "Out of the office" });
  subject.classList.add("wide");
  const body = h("textarea", { id: "ar-body", rows: 7, maxlength: 65536, placeholder: "I am away until Monday and will answer then." });
  body.value = ar.body;
  // step 1: the API keeps seconds, and a value with seconds would fail a
  // minute step's check.
  const start = field("Start, UTC (empty: at once)", { type: "datetime-local", step: 1, value: ar.start || "", id: "ar-start" });
  const end = field("End, UTC (empty: never)", { type: "datetime-local", step: 1, value: ar.end || "", id: "ar-end" });

  const form = onSubmit(ctx, h("form", { class: "inline", id: "autoreply-form" },
    h("label", { class: "check" }, enabled, " Reply automatically"),
    subject,
    h("label", { class: "field text" }, h("span", {}, "Text"), body),
    start, end,
    h("button", { type: "submit" }, "Save auto-reply")),
  async () => {
    await put(path, {
      enabled: enabled.checked, subject: subject.input.value.trim(), body: body.value,
      start: when(start.input.value), end: when(end.input.value),
    });
    return `Auto-reply of ${email} saved`;
  });

  const exists = ar.enabled || ar.subject !== "" || ar.body !== "";
  return h("div", {}, head,
    h("p", { class: "crumbs" }, h("a", { href: "#/domains/" + seg(d.name) + "/mailboxes" }, "Mailboxes"), " / ", email),
    section(`Auto-reply of ${email}`,
      h("p", { id: "ar-state" }, state(ar)),
      form,
      h("p", { class: "note" },
        "While on, and between the start and the end, mail to this mailbox or one of its aliases is answered from its address, ",
        "at most once per sender within the server's interval (7 days unless the operator changed it). ",
        "Mailing lists, bulk mail, automatic messages and bounces are never answered (RFC 3834).")),
    exists && section("Remove",
      h("p", {}, "Removing the auto-reply also forgets whom it has answered: after a new one is set, every sender gets a reply again."),
      button(ctx, "Remove auto-reply", async () => {
        if (!confirm(`Remove the auto-reply of ${email}?`)) return;
        await del(path);
        return `Auto-reply of ${email} removed`;
      }, { class: "danger", id: "ar-remove" })));
}

// when is a datetime-local value as the API takes it: seconds added when
// the browser left them out (it does when they are zero); empty: null.
function when(v) {
  if (!v) return null;
  return /T\d\d:\d\d$/.test(v) ? v + ":00" : v;
}

// state says what the auto-reply does now.
function state(ar) {
  const t = (s) => new Date(s + "Z").getTime();
  const now = Date.now();
  const at = (s) => s.replace("T", " ") + " UTC";
  if (!ar.enabled) return ar.subject ? "Off: nothing is answered." : "No auto-reply is set.";
  if (ar.end && t(ar.end) <= now) return `Ended ${at(ar.end)}: nothing is answered.`;
  if (ar.start && t(ar.start) > now) return `Starts ${at(ar.start)}` + (ar.end ? `, ends ${at(ar.end)}.` : ", no end.");
  return "On: replying now" + (ar.end ? `, until ${at(ar.end)}.` : ", with no end.");
}
