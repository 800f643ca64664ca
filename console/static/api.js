// api.js: the public management API, called from the browser with the
// key kept in this tab's sessionStorage. Same origin, so no CORS; the key
// goes only in the Authorization header, never in a URL or a cookie.

const KEY = "mailhost.apiKey";

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (k) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
};

// ApiError is a non-2xx answer: its status and the API's detail text.
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

// onUnauthorized is called on a 401 (a revoked key, say): app.js signs out.
export let onUnauthorized = () => {};
export function setOnUnauthorized(fn) { onUnauthorized = fn; }

// call sends one request and answers {body, total}: the parsed JSON and,
// for lists, X-Total-Count. A 429 is retried after its Retry-After, twice
// at most, since a page of mailboxes asks for each one's usage at once.
export async function call(method, path, body, tries = 3) {
  const k = key.get();
  if (!k) throw new ApiError(401, "Not signed in");
  const headers = { Authorization: "Bearer " + k, Accept: "application/json" };
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  if (r.status === 429 && tries > 1) {
    const wait = Math.min(10, Number(r.headers.get("Retry-After")) || 1);
    await new Promise((ok) => setTimeout(ok, wait * 1000));
    return call(method, path, body, tries - 1);
  }
  let data = null;
  if ((r.headers.get("Content-Type") || "").includes("json")) data = await r.json();
  if (!r.ok) {
    if (r.status === 401) onUnauthorized();
    throw new ApiError(r.status, (data && data.detail) || r.statusText || "Request failed");
  }
  const total = r.headers.get("X-Total-Count");
  return { body: data, total: total === null ? null : Number(total) };
}

// get, post, put and del answer the body only.
export const get = async (p) => (await call("GET", p)).body;
export const post = async (p, b) => (await call("POST", p, b)).body;
export const put = async (p, b) => (await call("PUT", p, b)).body;
export const del = async (p) => (await call("DELETE", p)).body;

// seg is one path segment: a domain name, an address or a catch-all's
// "@domain", escaped.
export const seg = encodeURIComponent;
