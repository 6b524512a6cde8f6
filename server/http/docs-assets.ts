// Swagger UI assets embedded in the executable with Bun's file loader (no CDN: RECIPES 1 and 2).
// @ts-ignore -- embedded by the file loader
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
// @ts-ignore -- embedded by the file loader
import css from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
// @ts-ignore -- embedded by the file loader
import oauth2 from "swagger-ui-dist/oauth2-redirect.js" with { type: "file" };
// @ts-ignore -- embedded by the file loader
import favicon32 from "swagger-ui-dist/favicon-32x32.png" with { type: "file" };
// @ts-ignore -- embedded by the file loader
import favicon16 from "swagger-ui-dist/favicon-16x16.png" with { type: "file" };

export const DOCS_ASSETS: ReadonlyMap<string, string> = new Map([
  ["swagger-ui-bundle.js", bundle as string],
  ["swagger-ui.css", css as string],
  ["oauth2-redirect.js", oauth2 as string],
  ["favicon-32x32.png", favicon32 as string],
  ["favicon-16x16.png", favicon16 as string],
]);
