#!/usr/bin/env node
// grammar-test.js — tokenizes every example model with the extension's TextMate
// grammar (vscode-textmate + vscode-oniguruma, as VS Code does) and checks the
// scopes the reference tokenizer (editors/tests/ctxlex.py) expects: every
// table word gets its class's scope, comments are comments, numbers are numbers,
// declared names are entity.name, ... Also checks package.json and
// language-configuration.json (indentation rules replayed on the examples).
//
// usage: node grammar-test.js EXPECTATIONS.json
// (editors/tests/run_vscode.py writes the JSON and runs this; exit 77 = skip)
'use strict';

const fs = require('fs');
const path = require('path');

let vsctm, oniguruma;
try {
  vsctm = require('vscode-textmate');
  oniguruma = require('vscode-oniguruma');
} catch (e) {
  console.log('SKIP: node modules vscode-textmate/vscode-oniguruma not found ' +
              '(run `npm ci` in editors/vscode/test): ' + e.message);
  process.exit(77);
}

// The scope each class of grammar/keywords.def must get. A class added to the
// table without an entry here fails the test (on purpose: decide its scope).
const CLASS_SCOPE = {
  DECL: 'keyword.other.declaration.ctx',
  CONTROL: 'keyword.control.ctx',
  TYPE: 'storage.type.ctx',
  REDUCE: 'keyword.other.reduce.ctx',
  ACCESSOR: 'support.function.accessor.ctx',
  BUILTIN: 'support.function.builtin.ctx',
  TYPEARG: 'variable.parameter.typearg.ctx',
  DIRECTIVE: 'keyword.other.directive.ctx',
  SCHEDARG: 'keyword.other.schedarg.ctx',
};
const DECL_NAME_SCOPE = {
  model: 'entity.name.type.model.ctx',
  dim: 'entity.name.constant.dim.ctx',
  input: 'entity.name.variable.ctx',
  param: 'entity.name.variable.ctx',
  schedule: 'entity.name.type.schedule.ctx',
};
// Scopes a plain identifier must never get (they mark words of the table).
const NOT_FOR_IDENT = ['keyword.', 'storage.', 'support.', 'constant.',
                       'variable.parameter.', 'entity.name.function.', 'comment.'];

const extDir = path.resolve(__dirname, '..');
const failures = [];
let checks = 0;
function fail(msg) { failures.push(msg); }

function readJson(p) {
  try {
    return JSON.parse(fs.readFileSync(p, 'utf8'));
  } catch (e) {
    fail(`${p}: not valid JSON: ${e.message}`);
    return null;
  }
}

// ---- package.json: languages and grammars -----------------------------------
const pkg = readJson(path.join(extDir, 'package.json'));
const grammarPaths = {};   // scopeName -> file
const extScope = {};       // '.ctx' -> scopeName
if (pkg) {
  const contrib = pkg.contributes || {};
  const langs = contrib.languages || [];
  const grammars = contrib.grammars || [];
  const langScope = {};
  for (const g of grammars) {
    const file = path.join(extDir, g.path);
    if (!fs.existsSync(file)) fail(`package.json: grammar ${g.path} does not exist`);
    grammarPaths[g.scopeName] = file;
    if (g.language) langScope[g.language] = g.scopeName;
    const gj = readJson(file);
    if (gj && gj.scopeName !== g.scopeName)
      fail(`${g.path}: scopeName ${gj.scopeName} != package.json's ${g.scopeName}`);
  }
  for (const l of langs) {
    if (l.configuration && !fs.existsSync(path.join(extDir, l.configuration)))
      fail(`package.json: ${l.configuration} of language ${l.id} does not exist`);
    if (!langScope[l.id]) fail(`package.json: language ${l.id} has no grammar`);
    for (const e of l.extensions || []) extScope[e] = langScope[l.id];
  }
  for (const e of ['.ctx', '.sched'])
    if (!extScope[e]) fail(`package.json: no language for ${e} files`);
  checks++;
}

// ---- language-configuration.json ---------------------------------------------
const conf = readJson(path.join(extDir, 'language-configuration.json'));
let increase = null, decrease = null;
if (conf) {
  if (!conf.comments || conf.comments.lineComment !== '#')
    fail('language-configuration.json: comments.lineComment must be "#"');
  const pairs = JSON.stringify(conf.brackets || []);
  for (const b of ['["{","}"]', '["[","]"]', '["(",")"]'])
    if (!pairs.includes(b)) fail(`language-configuration.json: brackets lack ${b}`);
  const open = (conf.autoClosingPairs || []).map(p => (Array.isArray(p) ? p[0] : p.open));
  for (const o of ['{', '[', '(', '"'])
    if (!open.includes(o)) fail(`language-configuration.json: no auto-closing pair for ${o}`);
  try {
    increase = new RegExp(conf.indentationRules.increaseIndentPattern);
    decrease = new RegExp(conf.indentationRules.decreaseIndentPattern);
  } catch (e) {
    fail('language-configuration.json: indentationRules: ' + e.message);
  }
  checks++;
}

// ---- tokenizing ---------------------------------------------------------------
const wasm = fs.readFileSync(
  path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
const onigLib = oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset,
                                                     wasm.byteOffset + wasm.byteLength))
  .then(() => ({
    createOnigScanner: s => new oniguruma.OnigScanner(s),
    createOnigString: s => new oniguruma.OnigString(s),
  }));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async scopeName => {
    const p = grammarPaths[scopeName];
    if (!p) return null;
    return vsctm.parseRawGrammar(fs.readFileSync(p, 'utf8'), p);
  },
});

function tokenizeFile(grammar, text) {
  const lines = text.split('\n');
  let stack = vsctm.INITIAL;
  const out = [];
  for (const line of lines) {
    const r = grammar.tokenizeLine(line, stack);
    out.push(r.tokens);
    stack = r.ruleStack;
  }
  return out;
}

// Tokens overlapping [start, end) of one line.
function covering(lineTokens, start, end) {
  return lineTokens.filter(t => t.startIndex < end && t.endIndex > start);
}

function describe(toks) {
  return toks.map(t => `[${t.startIndex},${t.endIndex}) ${t.scopes.slice(1).join(' ')}`)
    .join(' | ');
}

function checkToken(file, lineTokens, e) {
  const where = `${file}:${e.line}:${e.col + 1}: '${e.text}' (${e.kind}` +
                (e.class ? ' ' + e.class : '') + ')';
  const start = e.ucol, end = e.ucol + e.ulen;
  const toks = covering(lineTokens, start, end);
  const all = (pred) => toks.length > 0 && toks.every(t => t.scopes.some(pred));
  const whole = () => toks.length === 1 && toks[0].startIndex === start &&
                      toks[0].endIndex === end;
  let want = null, exact = true;
  switch (e.kind) {
    case 'word':
      want = CLASS_SCOPE[e.class];
      if (!want) {
        fail(`${where}: class ${e.class} has no scope in grammar-test.js CLASS_SCOPE`);
        return;
      }
      break;
    case 'declname': want = DECL_NAME_SCOPE[e.decl] || 'entity.name.'; break;
    case 'funcname': want = 'entity.name.function.ctx'; break;
    case 'target': want = 'support.constant.target.ctx'; break;
    case 'label': want = 'entity.name.label.op.ctx'; break;
    case 'number': want = 'constant.numeric.ctx'; break;
    case 'string': want = 'string.quoted.double.ctx'; exact = false; break;
    case 'comment':
      want = e.text.startsWith('#') ? 'comment.line.number-sign.ctx'
                                    : 'comment.line.double-slash.ctx';
      exact = false;
      break;
    case 'op': want = 'keyword.operator.'; break;
    case 'punct': case 'bracket': want = 'punctuation.'; break;
    case 'ident': {
      checks++;
      const bad = toks.filter(t => t.scopes.some(s => NOT_FOR_IDENT.some(p => s.startsWith(p))));
      if (bad.length) fail(`${where}: plain identifier got ${describe(bad)}`);
      return;
    }
    default: return;
  }
  checks++;
  const ok = want.endsWith('.') ? all(s => s.startsWith(want)) : all(s => s === want);
  if (!ok) fail(`${where}: want ${want}${want.endsWith('.') ? '*' : ''}, got ${describe(toks)}`);
  else if (exact && !whole())
    fail(`${where}: not one token [${start},${end}): ${describe(toks)}`);
}

// Replays VS Code's indentationRules on a file: the next line is indented one
// level more after a line matching increaseIndentPattern, one level less when
// it matches decreaseIndentPattern. Those rules see one line at a time, so a
// line is only checked when the line before it is bracket-balanced or ends with
// its opening bracket, and when it starts with at most one closing bracket;
// continuation lines (infix operator in front) are
// aligned by hand and skipped.
function checkIndentRules(file, text, contLines, fileTokens) {
  if (!increase || !decrease) return;
  const lines = text.split('\n');
  const cont = new Set(contLines);
  const net = new Array(lines.length + 1).fill(0);
  const lastBracket = {};
  const lastTok = {};
  for (const e of fileTokens) {
    if (e.kind === 'comment') continue;
    lastTok[e.line] = e;
    if (e.kind !== 'bracket') continue;
    net[e.line] += '([{'.includes(e.text) ? 1 : -1;
    lastBracket[e.line] = e;
  }
  let prev = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const ln = i + 1;
    if (!line.trim()) continue;
    const ind = line.length - line.trimStart().length;
    const p = prev;
    prev = { ind, text: line, ln };
    if (p === null || cont.has(ln) || /^\s*[\])}]\s*[\])}]/.test(line)) continue;
    const endsOpen = lastTok[p.ln] && lastTok[p.ln] === lastBracket[p.ln] &&
                     '([{'.includes(lastTok[p.ln].text);
    const leadsClose = /^\s*[\])}]/.test(p.text);
    if (!(net[p.ln] === 0 || (net[p.ln] === 1 && endsOpen) ||
          (net[p.ln] === -1 && leadsClose)) || cont.has(p.ln))
      continue;
    let want = p.ind + (increase.test(p.text) ? 2 : 0);
    if (decrease.test(line)) want -= 2;
    checks++;
    if (want !== ind)
      fail(`${file}:${ln}: indentationRules give ${want}, file has ${ind}`);
  }
}

async function main() {
  const expPath = process.argv[2];
  if (!expPath) {
    console.error('usage: grammar-test.js EXPECTATIONS.json');
    process.exit(2);
  }
  const exp = JSON.parse(fs.readFileSync(expPath, 'utf8'));
  for (const c of exp.classes)
    if (!CLASS_SCOPE[c]) fail(`keywords.def class ${c} has no scope in grammar-test.js CLASS_SCOPE`);
  for (const f of exp.files) {
    const ext = path.extname(f.name);
    const scope = extScope[ext];
    if (!scope) { fail(`${f.name}: no grammar for ${ext}`); continue; }
    const grammar = await registry.loadGrammar(scope);
    if (!grammar) { fail(`${f.name}: grammar ${scope} did not load`); continue; }
    const text = fs.readFileSync(f.path, 'utf8');
    const toks = tokenizeFile(grammar, text);
    const before = failures.length, c0 = checks;
    for (const e of f.tokens) checkToken(f.name, toks[e.line - 1], e);
    checkIndentRules(f.name, text, f.continuation_lines, f.tokens);
    console.log(`${f.name} (${scope}): ${checks - c0} checks, ${failures.length - before} failed`);
  }
  for (const m of failures.slice(0, 60)) console.log('FAIL ' + m);
  if (failures.length > 60) console.log(`... and ${failures.length - 60} more`);
  console.log(`vscode grammar: ${checks - failures.length} passed, ${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}

main().catch(e => {
  console.log('FAIL ' + (e.stack || e));
  process.exit(1);
});
