// webhooks.js: the partner's webhooks: list, subscribe a URL to events
// (its signing secret shown once), delete.

import { h, field, copyButton } from "./dom.js";
import { call, post, del, seg } from "./api.js";
import { onSubmit, button, pager, pageQuery, section } from "./ui.js";

// events are the API's event types, in the order docs/webhooks.md lists
// them; the API has no route that lists them, and a unit test keeps this
// list equal to the server's.
export const events = [
  ["mailbox.quota_warning", "a mailbox reaches 80 % of its quota"],
  ["mailbox.quota_full", "mail to a mailbox is refused for its quota"],
  ["domain.transfer_cap_warning", "a domain reaches 80 % of its monthly transfer cap"],
  ["domain.transfer_cap_reached", "a domain reaches its transfer cap"],
  ["domain.suspended", "a domain is suspended"],
  ["domain.resumed", "a domain is resumed"],
  ["domain.verified", "a domain's ownership is verified"],
  ["domain.claim_ended", "another partner verified a name you held unverified"],
  ["message.bounced", "a message a mailbox sent bounced"],
];

// created is the answer to the last creation, secret included, until
// the list that follows it has shown it: the API answers the secret to
// the creation only, and the console keeps it nowhere else.
let created = null;

// page is #/webhooks.
export async function page(ctx) {
  const { body: hooks, total } = await call("GET", "/webhooks/?" + pageQuery(ctx));
  const fresh = created;
  created = null;

  const url = field("URL", { type: "url", required: true, placeholder: "https://receiver.example", id: "hook-url", spellcheck: "false", autocomplete: "off" });
  url.classList.add("wide");
  const boxes = events.map(([name, what]) => {
    const box = h("input", { type: "checkbox", value: name });
    return h("label", { class: "check event" }, box, " ", h("code", {}, name), h("span", { class: "note" }, what));
  });
  const form = onSubmit(ctx, h("form", { class: "inline", id: "create-webhook" }, url,
    h("fieldset", { class: "events" }, h("legend", {}, "Events"), boxes),
    h("button", { type: "submit" }, "Add webhook")),
  async () => {
    const chosen = boxes.map((b) => b.querySelector("input")).filter((b) => b.checked).map((b) => b.value);
    if (chosen.length === 0) throw new Error("Choose at least one event.");
    created = await post("/webhooks/", { url: url.input.value.trim(), events: chosen });
    return `Webhook ${created.id} added`;
  });

  return h("div", {},
    h("h1", {}, "Webhooks"),
    fresh && secretCard(fresh),
    section("Add a webhook", form,
      h("p", { class: "note" }, "Each event is POSTed to the URL as JSON, signed with the webhook's secret, and retried with backoff for 24 hours until it is answered 2xx. ",
        "At most 20 webhooks. How a receiver checks the signature: docs/webhooks.md.")),
    section(`Webhooks (${total})`,
      hooks.length === 0 ? h("p", {}, "No webhook yet.") :
        h("table", { class: "list", id: "webhooks" },
          h("thead", {}, h("tr", {}, ["ID", "URL", "Events", "Created", ""].map((t) => h("th", {}, t)))),
          h("tbody", {}, hooks.map((w) => h("tr", { "data-id": w.id },
            h("td", {}, String(w.id)),
            h("td", { class: "value" }, h("code", {}, w.url)),
            h("td", {}, w.events.map((e) => h("code", { class: "event-name" }, e))),
            h("td", {}, w.created_at.replace("T", " ")),
            h("td", {}, button(ctx, "Delete", async () => {
              if (!confirm(`Delete webhook ${w.id} (${w.url})? Events not yet delivered to it are dropped.`)) return;
              await del("/webhooks/" + seg(String(w.id)));
              return `Webhook ${w.id} deleted`;
            }, { class: "danger small" })))))),
      pager(ctx, total)));
}

// secretCard shows a new webhook's secret, the one time the API gives it.
function secretCard(w) {
  const card = h("section", { class: "card secret", id: "webhook-secret", role: "alert" },
    h("h2", {}, `Secret of webhook ${w.id}`),
    h("p", {}, h("strong", {}, "Shown only now. "),
      "Store it with your receiver: it checks each delivery's signature with it. The API never shows it again; ",
      "if it is lost, delete the webhook and add a new one."),
    h("p", { class: "secret-value" }, h("code", { id: "webhook-secret-value" }, w.secret), " ", copyButton(w.secret, "the secret")),
    h("p", { class: "note" }, `For ${w.url}`));
  const done = h("button", { type: "button", class: "small" }, "I have stored it");
  done.addEventListener("click", () => card.remove());
  card.append(h("p", {}, done));
  return card;
}
