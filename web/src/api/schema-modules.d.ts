/** See openApiSchemas() in web/vite.config.mts: one schema of the API's OpenAPI document and the schemas it refers to. */
declare module 'virtual:schema/*' {
  const schema: { root: string; schemas: Record<string, import('./json-schema').JsonSchema> };
  export default schema;
}
