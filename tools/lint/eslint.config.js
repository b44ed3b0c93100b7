/* The JavaScript linter's rules (eslint's recommended set), run by .ci/run from the repository's root:
 *   tools/lint/node_modules/.bin/eslint -c tools/lint/eslint.config.js app
 * The player's parts (app/view/player/) are ES modules: no-undef there proves each name a part uses is declared or
 * imported, so nothing hangs on the order app/view/bundle.py joins them in. Besides the browser's own globals, the
 * bundle's wrapper hands every part two names (THEME, the theme's values, and global, the window): the only names
 * the parts share without an import.
 * The browser race's parts (app/site/js/) are ES modules too, bundled by app/site/build.py with no names handed in.
 * The page's scripts (app/ui/, app/site/) are classic scripts and see the browser's globals and each other's. */
import js from "@eslint/js";
import globals from "globals";

export default [
  { ...js.configs.recommended, files: ["app/**/*.js"] },
  /* a catch that names its error and ignores it says so in a comment */
  { files: ["app/**/*.js"], rules: { "no-unused-vars": ["error", { caughtErrors: "none" }] } },
  {
    files: ["app/view/player/*.js"],
    languageOptions: { sourceType: "module", globals: { ...globals.browser, THEME: "readonly", global: "readonly" } },
  },
  {
    files: ["app/site/js/*.js"],
    languageOptions: { sourceType: "module", globals: { ...globals.browser } },
  },
  {
    files: ["app/ui/*.js", "app/site/*.js"],
    languageOptions: {
      sourceType: "script",
      globals: { ...globals.browser, ConvergePlayer: "readonly", ConvergeRows: "readonly" },
    },
  },
  {
    /* the body of a Gradio js_on_load handler, which names its arguments */
    files: ["app/ui/player_glue.js"],
    languageOptions: { globals: { element: "readonly", props: "readonly", watch: "readonly" } },
  },
  {
    /* rows.js's BLANK matches Python's str.isspace, control characters included, on purpose */
    files: ["app/site/js/rows.js"],
    rules: { "no-control-regex": "off" },
  },
];
