// The console's only script: live updates over server-sent events, the live search, and
// the admin actions. No framework, nothing loaded from anywhere but this daemon.
"use strict";

(function () {
  const live = document.getElementById("live");
  const status = document.getElementById("live-status");
  let source = null;

  function say(text) {
    if (status) status.textContent = text;
  }

  function replace(html) {
    // Keep keyboard focus on the same control across the update.
    const active = document.activeElement;
    const key = active && live.contains(active)
      ? (active.id ? "#" + CSS.escape(active.id) : null) ||
        (active.getAttribute("href") ? 'a[href="' + CSS.escape(active.getAttribute("href")) + '"]' : null)
      : null;
    live.innerHTML = html;
    if (key) {
      const again = live.querySelector(key);
      if (again) again.focus();
    }
    document.dispatchEvent(new CustomEvent("console:updated"));
  }

  function connect(url) {
    if (source) source.close();
    live.dataset.stream = url;
    source = new EventSource(url);
    source.addEventListener("open", () => say("live"));
    source.addEventListener("error", () => say("reconnecting…"));
    source.addEventListener("update", (event) => {
      if (event.data.startsWith('{"gone"')) {
        say("this group is gone");
        return;
      }
      replace(event.data);
      say("live");
    });
  }

  function streamFor(pageUrl) {
    const url = new URL(pageUrl, location.href);
    const params = new URLSearchParams(url.search);
    const view = { "/": "overview", "/groups": "groups", "/group": "group", "/topics": "topics" }[url.pathname];
    params.set("view", view || "overview");
    params.set("format", "html");
    return "/api/stream?" + params.toString();
  }

  // Navigating the groups table (sort, pages, search) re-points the stream: no reload.
  function navigate(pageUrl) {
    history.replaceState(null, "", pageUrl);
    connect(streamFor(pageUrl));
  }

  if (live && live.dataset.stream && window.EventSource) {
    connect(live.dataset.stream);
    live.addEventListener("click", (event) => {
      const link = event.target.closest("a[data-live-link]");
      if (!link) return;
      event.preventDefault();
      navigate(link.getAttribute("href"));
      const form = document.querySelector("form[data-live-form]");
      if (form) {
        const params = new URL(link.href).searchParams;
        for (const name of ["sort", "order"]) {
          if (form.elements[name]) form.elements[name].value = params.get(name) || "";
        }
      }
    });
  }

  const form = document.querySelector("form[data-live-form]");
  if (form && live) {
    let timer = null;
    const apply = () => {
      const params = new URLSearchParams(new FormData(form));
      for (const [k, v] of [...params.entries()]) if (!v) params.delete(k);
      navigate(form.getAttribute("action") + "?" + params.toString());
    };
    form.addEventListener("submit", (event) => { event.preventDefault(); apply(); });
    form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 250); });
  }

  // Admin actions: a confirmation, then a JSON POST; the result is said in a status line.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
    const body = { group: button.dataset.group };
    if (button.dataset.instance) body.instance_id = button.dataset.instance;
    if (button.dataset.topicFrom) body.topic = document.getElementById(button.dataset.topicFrom).value;
    const result = document.getElementById("action-result");
    button.disabled = true;
    try {
      const response = await fetch("/api/actions/" + button.dataset.action, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (result) result.textContent = response.ok ? "Done: " + button.textContent.trim() : "Refused: " + answer.error;
    } catch (error) {
      if (result) result.textContent = "Failed: " + error;
    } finally {
      button.disabled = false;
    }
  });
})();
