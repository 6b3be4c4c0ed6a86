// Starts Swagger UI from the files served with this page (no network), over the plain endpoint list.
window.addEventListener("load", function () {
  if (!window.SwaggerUIBundle) return;
  window.SwaggerUIBundle({ url: "/docs/openapi-3.0.json", dom_id: "#swagger-ui" });
  document.getElementById("plain").hidden = true;
});
