// usage.js: what the domains use: counts, storage, and the month's
// transfer as a chart against the cap. The API gives the month's totals
// (received, sent), not a series by day, so the chart shows those, with
// the month-end pace they imply.

import { h, s, fmt } from "./dom.js";
import { call, get, seg } from "./api.js";
import { pager, pageQuery, domainHeader, section } from "./ui.js";

// domain is #/domains/{name}/usage.
export async function domain(ctx, name) {
  const [{ domain: d, el: head }, u] = await Promise.all([
    domainHeader(ctx, name, "/usage"), get("/domains/" + seg(name) + "/usage")]);
  const of = (n) => (n ? ` of ${fmt(n)}` : "");
  return h("div", {}, head,
    h("div", { class: "tiles" },
      tile("Mailboxes", fmt(u.mailbox_count) + of(d.max_mailboxes)),
      tile("Aliases", fmt(u.alias_count) + of(d.max_aliases)),
      tile("Messages", fmt(u.message_count)),
      tile("Storage", fmt(u.storage_used_mb) + " MB")),
    section(`Transfer in ${u.month}`, transferChart(u),
      h("p", { class: "note" },
        `Received ${fmt(u.transfer_in_mb)} MB, sent ${fmt(u.transfer_out_mb)} MB: ${fmt(u.transfer_total_mb)} MB `,
        `of the ${fmt(u.transfer_monthly_mb)} MB cap (${pct(u)}%). The count starts again on the first of the month (UTC).`)));
}

const tile = (label, value) => h("div", { class: "tile" }, h("span", {}, label), h("strong", {}, value));
const pct = (u) => Math.round((u.transfer_total_mb / u.transfer_monthly_mb) * 100);

// elapsed is the part of month (YYYY-MM, UTC) gone by now: 1 for a past
// month.
function elapsed(month, now = new Date()) {
  const [y, m] = month.split("-").map(Number);
  const start = Date.UTC(y, m - 1, 1);
  const end = Date.UTC(y, m, 1);
  return Math.min(1, Math.max(0, (now.getTime() - start) / (end - start)));
}

// transferChart draws received, sent and their total as bars, the cap as
// a dashed line, and the total's month-end pace as an outline.
export function transferChart(u) {
  const e = elapsed(u.month);
  const pace = e > 0.02 && e < 1 ? u.transfer_total_mb / e : 0;
  const max = Math.max(u.transfer_monthly_mb, u.transfer_total_mb, pace) * 1.08 || 1;
  const x0 = 92, w = 520, row = 34;
  const x = (mb) => x0 + (mb / max) * w;
  const rows = [
    ["Received", [[u.transfer_in_mb, "in"]]],
    ["Sent", [[u.transfer_out_mb, "out"]]],
    ["Total", [[u.transfer_in_mb, "in"], [u.transfer_out_mb, "out"]]],
  ];
  const svg = s("svg", {
    class: "chart", viewBox: `0 0 640 ${rows.length * row + 40}`, role: "img",
    "aria-label": `Transfer in ${u.month}: received ${fmt(u.transfer_in_mb)} MB, sent ${fmt(u.transfer_out_mb)} MB, cap ${fmt(u.transfer_monthly_mb)} MB`,
  });
  rows.forEach(([label, parts], i) => {
    const y = 10 + i * row;
    svg.append(s("text", { x: 0, y: y + 17, class: "label" }, label));
    svg.append(s("rect", { x: x0, y, width: w, height: 22, class: "track" }));
    let at = 0;
    for (const [mb, cls] of parts) {
      svg.append(s("rect", { x: x(at), y, width: Math.max(0, x(at + mb) - x(at)), height: 22, class: cls }));
      at += mb;
    }
    if (label === "Total" && pace > at) {
      svg.append(s("rect", { x: x(at), y: y + 1, width: x(pace) - x(at), height: 20, class: "pace" }));
    }
    svg.append(s("text", { x: Math.min(x(at) + 6, 600), y: y + 16, class: "value" }, fmt(at) + " MB"));
  });
  const capX = x(u.transfer_monthly_mb);
  const bottom = rows.length * row + 6;
  svg.append(s("line", { x1: capX, x2: capX, y1: 4, y2: bottom, class: "cap" }));
  svg.append(s("text", { x: capX, y: bottom + 16, class: "cap-label", "text-anchor": "middle" }, `cap ${fmt(u.transfer_monthly_mb)} MB`));
  return h("figure", { class: "chart-box" }, svg,
    h("figcaption", {},
      h("span", { class: "key in" }), " received ", h("span", { class: "key out" }), " sent ",
      pace > 0 && [h("span", { class: "key pace" }, ""), ` on pace for ${fmt(pace)} MB by the month's end`]));
}

// miniChart is one stacked bar of received and sent against the cap, for
// a table row.
function miniChart(u) {
  const max = Math.max(u.transfer_monthly_mb, u.transfer_total_mb) || 1;
  const svg = s("svg", { class: "mini", viewBox: "0 0 200 14", role: "img", "aria-label": `${fmt(u.transfer_total_mb)} of ${fmt(u.transfer_monthly_mb)} MB` });
  const w = (mb) => (mb / max) * 200;
  svg.append(s("rect", { x: 0, y: 0, width: 200, height: 14, class: "track" }));
  svg.append(s("rect", { x: 0, y: 0, width: w(u.transfer_in_mb), height: 14, class: "in" }));
  svg.append(s("rect", { x: w(u.transfer_in_mb), y: 0, width: w(u.transfer_out_mb), height: 14, class: "out" }));
  svg.append(s("line", { x1: w(u.transfer_monthly_mb), x2: w(u.transfer_monthly_mb), y1: 0, y2: 14, class: "cap" }));
  return svg;
}

// all is #/usage: every domain of the page with its transfer bar.
export async function all(ctx) {
  const { body: ds, total } = await call("GET", "/domains/?" + pageQuery(ctx));
  const us = await Promise.all(ds.map((d) => get("/domains/" + seg(d.name) + "/usage")));
  const sum = (k) => us.reduce((a, u) => a + u[k], 0);
  return h("div", {},
    h("h1", {}, "Usage"),
    h("div", { class: "tiles" },
      tile("Domains", fmt(total)),
      tile("Mailboxes", fmt(sum("mailbox_count"))),
      tile("Storage", fmt(sum("storage_used_mb")) + " MB"),
      tile("Transfer this month", fmt(sum("transfer_total_mb")) + " MB")),
    total > ds.length && h("p", { class: "note" }, "The figures above are those of the domains on this page."),
    section("Transfer this month, by domain",
      ds.length === 0 ? h("p", {}, "No domain yet.") :
        h("table", { class: "list", id: "usage" },
          h("thead", {}, h("tr", {}, ["Domain", "Mailboxes", "Messages", "Storage", "Transfer (received, sent, cap)", ""].map((t) => h("th", {}, t)))),
          h("tbody", {}, us.map((u) => h("tr", {},
            h("td", {}, h("a", { href: "#/domains/" + seg(u.name) + "/usage" }, u.name)),
            h("td", {}, fmt(u.mailbox_count)),
            h("td", {}, fmt(u.message_count)),
            h("td", {}, fmt(u.storage_used_mb) + " MB"),
            h("td", {}, miniChart(u)),
            h("td", {}, `${fmt(u.transfer_total_mb)} of ${fmt(u.transfer_monthly_mb)} MB (${pct(u)}%)`))))),
      h("p", { class: "note" }, h("span", { class: "key in" }), " received ", h("span", { class: "key out" }), " sent, the line is the cap."),
      pager(ctx, total)));
}
