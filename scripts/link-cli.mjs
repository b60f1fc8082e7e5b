// The compiled tree mirrors the repo (dist/src, dist/test, ...). The documented entry point is
// dist/cli.js, so write a two-line shim there that loads the real CLI.
import { writeFileSync, chmodSync } from 'node:fs';
writeFileSync('dist/cli.js', "#!/usr/bin/env node\nimport './src/cli.js';\n");
chmodSync('dist/cli.js', 0o755);
