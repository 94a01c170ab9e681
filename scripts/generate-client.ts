// Writes the TypeScript types of the platform's API from its OpenAPI document, for a typed client
// made with openapi-fetch (README: "A typed client"):
//
//   bun scripts/generate-client.ts http://localhost:3000/api/docs/json platform-api.d.ts
//
// The source may be a URL or a file. It is openapi-typescript, with one difference from its CLI:
// upload fields (`format: binary`) are typed as Blob rather than string, so a ZIP can be passed
// to `deployApp` as it is.
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const [source, output] = process.argv.slice(2);
if (!source || !output) {
  console.error("usage: bun scripts/generate-client.ts <document URL or file> <output .d.ts>");
  process.exit(2);
}

const document = /^https?:\/\//.test(source) ? await (await fetch(source)).json() : await Bun.file(source).json();
const nodes = await openapiTS(document, {
  transform(schema) {
    if (schema.format === "binary") return ts.factory.createTypeReferenceNode("Blob");
  },
});
await Bun.write(output, astToString(nodes));
console.log(`wrote ${output}`);
