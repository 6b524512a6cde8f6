// The forge REST routes the service calls (DESIGN 7.1), on real forge paths, with the forge's auth rules and pagination.
// Shared types and helpers are in route-kit.ts; the routes themselves live in routes-*.ts by area.
import type { Route } from "./route-kit.ts";
import { APP_ROUTES } from "./routes-app.ts";
import { CHECK_ROUTES } from "./routes-checks.ts";
import { DIRECTORY_ROUTES } from "./routes-directory.ts";
import { REPOSITORY_ROUTES } from "./routes-repos.ts";

export { HttpFail, type Auth, type Ctx, type Result, type Route, type TokenRequest } from "./route-kit.ts";

export const ROUTES: Route[] = [...APP_ROUTES, ...REPOSITORY_ROUTES, ...DIRECTORY_ROUTES, ...CHECK_ROUTES];
