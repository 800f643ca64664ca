// ui.js: what the views share: messages, forms that call the API, paging
// and the tabs of a domain.

import { h } from "./dom.js";
import { ApiError, get, seg } from "./api.js";

let toastTimer;

// toast shows a short message at the bottom of the page.
export function toast(text, isError) {
  const t = document.getElementById("toast");
  t.className = isError ? "show error" : "show";
  t.textContent = text;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.className = ""; }, isError ? 6000 : 2500);
}

// message is the text to show for a failure.
export function message(err) {
  if (err instanceof ApiError) return `${err.message} (${err.status})`;
  return String(err && err.message ? err.message : err);
}

// onSubmit makes form call fn(form) on submit, with its submit button
// disabled meanwhile; fn's failure is shown in the form, its success
// (a text) as a toast, and then ctx.refresh() redraws the view.
export function onSubmit(ctx, form, fn) {
  const err = h("p", { class: "error", role: "alert" });
  form.append(err);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    err.textContent = "";
    try {
      const done = await fn(form);
      if (done) toast(done);
      ctx.refresh();
    } catch (x) {
      err.textContent = message(x);
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });
  return form;
}

// button is a button that runs fn like onSubmit does, its failure shown
// as a toast.
export function button(ctx, label, fn, attrs) {
  const b = h("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      const done = await fn();
      if (done) toast(done);
      ctx.refresh();
    } catch (x) {
      toast(message(x), true);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// pageSize is the length of one page of a list.
export const pageSize = 25;

// pager is the "1–25 of 60, Previous, Next" line of a list whose page
// number is the hash's ?p=.
export function pager(ctx, total) {
  const p = ctx.page;
  const first = total === 0 ? 0 : (p - 1) * pageSize + 1;
  const last = Math.min(total, p * pageSize);
  const link = (n, label) => h("a", { href: ctx.path + (n > 1 ? "?p=" + n : ""), class: "button small" }, label);
  return h("p", { class: "pager" },
    `${first}–${last} of ${total}`,
    p > 1 && link(p - 1, "Previous"),
    last < total && link(p + 1, "Next"));
}

// pageQuery is the limit and offset of the view's page.
export const pageQuery = (ctx) => `limit=${pageSize}&offset=${(ctx.page - 1) * pageSize}`;

// domainHeader fetches the domain and makes its title, badges and tabs.
export async function domainHeader(ctx, name, active) {
  const d = await get("/domains/" + seg(name));
  const base = "#/domains/" + seg(d.name);
  const tabs = [["Settings", ""], ["Mailboxes", "/mailboxes"], ["Aliases", "/aliases"], ["DNS", "/dns"], ["Usage", "/usage"]];
  return {
    domain: d,
    el: h("div", { class: "domain-head" },
      h("p", { class: "crumbs" }, h("a", { href: "#/domains" }, "Domains"), " / "),
      h("h1", {}, d.name, " ", badges(d)),
      h("nav", { class: "tabs", "aria-label": "Domain" },
        tabs.map(([label, sub]) => h("a", { href: base + sub, "aria-current": sub === active ? "page" : null }, label)))),
  };
}

// badges are a domain's states.
export function badges(d) {
  return h("span", { class: "badges" },
    d.suspended ? h("span", { class: "badge bad" }, "suspended") : h("span", { class: "badge good" }, "active"),
    d.verified ? h("span", { class: "badge good" }, "verified") : h("span", { class: "badge" }, "not verified"));
}

// section is a titled block of a page.
export const section = (title, ...children) => h("section", { class: "card" }, h("h2", {}, title), ...children);
