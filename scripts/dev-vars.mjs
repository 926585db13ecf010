// `npm start` on a fresh clone: give wrangler dev the documented local secrets when .dev.vars is missing.
import { copyFileSync, existsSync } from "node:fs";

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log(
    "edge-offload: created .dev.vars from .dev.vars.example (local key: local:sk-local-dev-key-1234)",
  );
}
