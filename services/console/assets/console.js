// The operator console's one script (served from /console/assets; the CSP allows no inline code): times are
// rendered by the server in UTC and shown here in the operator's own zone. Without it the pages work the same.
for (const el of document.querySelectorAll("time[datetime]")) {
  const at = new Date(el.getAttribute("datetime"));
  if (!Number.isNaN(at.getTime())) {
    el.title = el.getAttribute("datetime");
    el.textContent = at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
  }
}
