// Offline copy of this site, made by tools/build.py: the version and file list are filled in
// at build time, so each release gets its own cache and removes the one before it.
// The scope is in the cache's name, so two copies on one origin keep their own caches.
const PREFIX = "kvcalc:" + self.registration.scope + ":";
const CACHE = PREFIX + "@VERSION@";
const FILES = @FILES@;

// The runtime's memory snapshot travels gzipped (tools/build.py) and is kept inflated, marked
// so, for static/early.mjs to restore on a warm load as it is. Without it a warm load starts
// Python as a cold one does: a snapshot that fails to arrive never fails the offline copy.
const SNAPSHOT = /\/snapshot-[0-9a-f]+\.bin$/;
const INFLATED = "X-Kvcalc-Inflated";

async function keepInflated(cache, request) {
  try {
    const response = await fetch(request);
    if (!response.ok) return;
    const inflated = await new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
    await cache.put(request, new Response(inflated, { headers: { "Content-Type": "application/octet-stream", [INFLATED]: "1" } }));
  } catch (error) {
    console.warn(`The runtime's snapshot was not kept (${error}): a reload starts Python as a first visit does.`);
  }
}

self.addEventListener("install", (event) => {
  // cache: "reload" skips the browser's HTTP cache, so a release never caches older files.
  const requests = FILES.map((url) => new Request(url, { cache: "reload" }));
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(requests.filter((request) => !SNAPSHOT.test(request.url)));
    await Promise.all(requests.filter((request) => SNAPSHOT.test(request.url)).map((request) => keepInflated(cache, request)));
    await self.skipWaiting();
  })());
});

// Replacing another release's copy, it tells every open page of this site: a page of another
// version then says "A new version is ready" with a Reload button (app/web/privacy.py).
self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const old = (await caches.keys()).filter((k) => k.startsWith(PREFIX) && k !== CACHE);
    await Promise.all(old.map((k) => caches.delete(k)));
    await self.clients.claim();
    if (!old.length) return;
    const pages = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const page of pages) page.postMessage({ kvcalc: "updated", version: CACHE.slice(PREFIX.length) });
  })());
});

// Cache first, for this origin only; the page never talks to any other.
self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const hit = await cache.match(request, { ignoreSearch: true });
    if (hit) return hit;
    try {
      return await fetch(request);
    } catch (error) {
      if (request.mode === "navigate") {
        const page = await cache.match("./");
        if (page) return page;
      }
      throw error;
    }
  })());
});
