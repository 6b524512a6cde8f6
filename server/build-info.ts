import pkg from "../package.json" with { type: "json" };

// Baked in by `bun build --define BUILD_REVISION='"<commit>"'` (scripts/build.ts); absent for a source installation.
declare const BUILD_REVISION: string | undefined;

export const APPLICATION_VERSION: string = pkg.version;
export const BUILD_REVISION_VALUE: string | null =
  typeof BUILD_REVISION === "string" && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(BUILD_REVISION) ? BUILD_REVISION : null;
