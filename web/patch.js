// JSON Patch (RFC 6902): the `add`, `remove` and `replace` operations the server sends in
// `patch` messages, applied in place to the state document a socket holds. Paths are JSON
// Pointers (RFC 6901). A patch that does not fit throws: the caller then asks for a full
// state (`sync`).
//
// The server writes them in the compact form (docs/protocol.md §3.4): `[path]` removes,
// `[path, value]` replaces, `["+" + path, value]` adds, and a path that does not start with
// `/` is under `/view/` (`["turn", 1]` replaces `/view/turn`). `expand` reads either form.

/** The RFC 6902 operation a compact one (an array) stands for; an object is one already. */
export function expand(op) {
  if (!Array.isArray(op)) return op;
  let path = op[0];
  if (typeof path !== 'string' || op.length < 1 || op.length > 2) throw new Error(`not a patch operation: ${JSON.stringify(op)}`);
  let kind = op.length === 1 ? 'remove' : 'replace';
  if (kind === 'replace' && path.startsWith('+')) {
    kind = 'add';
    path = path.slice(1);
  }
  if (!path.startsWith('/')) path = `/view/${path}`;
  return op.length === 1 ? { op: kind, path } : { op: kind, path, value: op[1] };
}

/** The version a `patch` message applies to: its `from`, or when left out `version - 1`. */
export function patchFrom(m) {
  return m.from ?? m.version - 1;
}

function unescape(token) {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function parentOf(doc, path) {
  if (!path.startsWith('/')) throw new Error(`not a JSON pointer: ${path}`);
  const tokens = path.slice(1).split('/').map(unescape);
  const last = tokens.pop();
  let node = doc;
  for (const t of tokens) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, t)) throw new Error(`no such location: ${path}`);
    node = node[t];
  }
  if (node === null || typeof node !== 'object') throw new Error(`not a container: ${path}`);
  return [node, last];
}

function arrayIndex(arr, token, bound, path) {
  if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= bound) throw new Error(`index out of range: ${path}`);
  return Number(token);
}

/** Applies `ops` to `doc` in order and returns the document (a new one only for `""`). */
export function applyPatch(doc, ops) {
  for (const compact of ops) {
    const op = expand(compact);
    if (op.path === '' && op.op === 'replace') {
      doc = op.value;
      continue;
    }
    const [parent, last] = parentOf(doc, op.path);
    const isArray = Array.isArray(parent);
    switch (op.op) {
      case 'add':
        if (isArray) parent.splice(last === '-' ? parent.length : arrayIndex(parent, last, parent.length + 1, op.path), 0, op.value);
        else parent[last] = op.value;
        break;
      case 'remove':
        if (isArray) parent.splice(arrayIndex(parent, last, parent.length, op.path), 1);
        else if (Object.hasOwn(parent, last)) delete parent[last];
        else throw new Error(`no such member: ${op.path}`);
        break;
      case 'replace':
        if (isArray) parent[arrayIndex(parent, last, parent.length, op.path)] = op.value;
        else if (Object.hasOwn(parent, last)) parent[last] = op.value;
        else throw new Error(`no such member: ${op.path}`);
        break;
      default:
        throw new Error(`unknown patch operation ${op.op}`);
    }
  }
  return doc;
}
