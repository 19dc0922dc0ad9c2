#!/usr/bin/env bash
# Vendors gpt-tokenizer's o200k_base encoding (npm, MIT), pinned in this
# directory's package.json, into the console's assets, so the draft
# editor's token estimates load from promptd itself (no CDN):
#
#   (cd internal/harness/browsertest && npm ci && ./vendor-tokenizer.sh)
#
# It copies esm/encoding/o200k_base.js and every module it imports
# (byte for byte, but for _virtual/_rolldown/ renamed virtual/rolldown/: go:embed skips
# names that begin with "_"), with the package's LICENSE (as LICENSE.txt), into
# console/assets/vendor/gpt-tokenizer/. TestVendoredTokenizer checks the
# copy against node_modules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
src=node_modules/gpt-tokenizer
dst=../../../console/assets/vendor/gpt-tokenizer
[ -f "$src/package.json" ] || { echo "run npm ci here first" >&2; exit 1; }
rm -rf "$dst"
mkdir -p "$dst"
cp "$src/LICENSE" "$dst/LICENSE.txt"
node --input-type=module - "$src" "$dst" <<'JS'
import fs from 'node:fs';
import path from 'node:path';
const [src, dst] = process.argv.slice(2);
const seen = new Set();
// go:embed leaves out names that begin with "_": the package's
// _virtual/_rolldown/ directory becomes virtual/rolldown/, in its path and
// in the imports naming it (the one change to the package's bytes).
const embeddable = (s) => s.replaceAll('_virtual/_rolldown/', 'virtual/rolldown/').replaceAll('_virtual/', 'virtual/');
const visit = (rel) => {
  if (seen.has(rel)) return;
  seen.add(rel);
  const text = fs.readFileSync(path.join(src, rel), 'utf8');
  const out = path.join(dst, embeddable(rel));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, embeddable(text));
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?['"](\.{1,2}\/[^'"]+)['"]/g)) {
    visit(path.posix.normalize(path.posix.join(path.posix.dirname(rel), m[1])));
  }
};
visit('esm/encoding/o200k_base.js');
console.log(`vendored ${seen.size} modules of gpt-tokenizer ${JSON.parse(fs.readFileSync(path.join(src, 'package.json'))).version}`);
JS
