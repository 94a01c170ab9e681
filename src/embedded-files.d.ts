// Files imported `with { type: "file" }` or `{ type: "text" }` to embed them in the binary.
declare module "*.sql" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const path: string;
  export default path;
}
declare module "*app.js" {
  const path: string;
  export default path;
}
declare module "*standalone.js" {
  const path: string;
  export default path;
}
declare module "*.mjs" {
  const text: string;
  export default text;
}
