// app.js: signing in and out, and the router: the hash names the view
// (#/domains, #/domains/example.com/mailboxes, #/usage, #/webhooks), so
// the key is never part of a URL and the back button works.

import { h, replace } from "./dom.js";
import { key, get, setOnUnauthorized } from "./api.js";
import { message } from "./ui.js";
import * as domains from "./domains.js";
import * as mailboxes from "./mailboxes.js";
import * as aliases from "./aliases.js";
import * as usage from "./usage.js";
import * as webhooks from "./webhooks.js";
import * as audit from "./audit.js";
import * as autoreply from "./autoreply.js";

const $ = (id) => document.getElementById(id);

// routes map a hash path to a view: an async function of (ctx, ...groups)
// that answers the view's element.
const routes = [
  [/^#\/domains$/, domains.list],
  [/^#\/domains\/([^/]+)$/, domains.settings],
  [/^#\/domains\/([^/]+)\/dns$/, domains.dns],
  [/^#\/domains\/([^/]+)\/mailboxes$/, mailboxes.page],
  [/^#\/domains\/([^/]+)\/mailboxes\/([^/]+)\/autoreply$/, autoreply.page],
  [/^#\/domains\/([^/]+)\/aliases$/, aliases.page],
  [/^#\/domains\/([^/]+)\/usage$/, usage.domain],
  [/^#\/usage$/, usage.all],
  [/^#\/webhooks$/, webhooks.page],
  [/^#\/audit$/, audit.page],
];

// rendering counts renders, so that a slow view finishing after the user
// has moved on does not replace the newer one.
let rendering = 0;

async function render() {
  if (!key.get()) return showSignIn();
  $("signin").hidden = true;
  $("top").hidden = false;
  const [path, query] = (location.hash || "#/domains").split("?");
  const page = Math.max(1, Number(new URLSearchParams(query).get("p")) || 1);
  const route = routes.find(([re]) => re.test(path));
  if (!route) {
    location.replace("#/domains");
    return;
  }
  document.querySelectorAll("[data-nav]").forEach((a) => {
    a.toggleAttribute("aria-current", path.startsWith("#/" + a.dataset.nav));
  });
  const n = ++rendering;
  const ctx = { path, page, refresh: render };
  const view = $("view");
  view.setAttribute("aria-busy", "true");
  let el;
  try {
    const args = route[0].exec(path).slice(1).map(decodeURIComponent);
    el = await route[1](ctx, ...args);
  } catch (err) {
    el = h("div", { class: "card" }, h("h1", {}, "Could not load this page"), h("p", { class: "error" }, message(err)),
      h("p", {}, h("a", { href: "#/domains" }, "Back to the domains")));
  }
  // A 401 on the way has signed out: the sign-in form stays alone.
  if (n !== rendering || !key.get()) return;
  replace(view, el);
  view.removeAttribute("aria-busy");
}

function showSignIn() {
  $("top").hidden = true;
  replace($("view"));
  $("signin").hidden = false;
  $("key").focus();
}

function signOut() {
  key.clear();
  $("key").value = "";
  $("signin-error").textContent = "";
  // The hash may name a page of the partner's; the next one signing in in
  // this tab starts from the domains.
  history.replaceState(null, "", location.pathname);
  showSignIn();
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const k = $("key").value.trim();
  if (!k) return;
  $("signin-button").disabled = true;
  $("signin-error").textContent = "";
  key.set(k);
  try {
    // Any authenticated call proves the key; this one is the cheapest.
    await get("/domains/?limit=1");
    $("key").value = "";
    if (!location.hash) location.replace("#/domains");
    render();
  } catch (err) {
    key.clear();
    $("signin-error").textContent = err.status === 401 ? "This key was not accepted." : message(err);
  } finally {
    $("signin-button").disabled = false;
  }
});

$("signout").addEventListener("click", signOut);
setOnUnauthorized(() => {
  signOut();
  $("signin-error").textContent = "The API no longer accepts this key: sign in again.";
});
window.addEventListener("hashchange", render);
render();
