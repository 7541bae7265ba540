// Starts Swagger UI on this suite's own OpenAPI document, read as YAML so
// that operations and examples keep the order they are written in. Everything
// it loads comes from this server: the online validator badge is off, the
// document's URL cannot be changed from the query string, and no layout that
// fetches from elsewhere is used.
window.ui = SwaggerUIBundle({
  url: "/openapi.yaml",
  dom_id: "#swagger-ui",
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  deepLinking: true,
  filter: true,
  displayRequestDuration: true,
  validatorUrl: null,
  queryConfigEnabled: false,
});
