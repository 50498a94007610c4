-- atenmap index schema. Bump SCHEMA_VERSION in store/__init__.py on any change.
-- One file per PyTorch source tree; built in a temporary file and renamed into place.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE files (
  id        INTEGER PRIMARY KEY,
  path      TEXT NOT NULL UNIQUE,      -- relative to the source root (or to the codegen dir)
  language  TEXT NOT NULL,             -- cpp, cuda, objcpp
  size      INTEGER NOT NULL,
  mtime_ns  INTEGER NOT NULL,
  status    TEXT NOT NULL,             -- ok, errors (parsed with ERROR nodes), skipped:<why>
  generated INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE facts (
  id        INTEGER PRIMARY KEY,
  file      INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  kind      TEXT NOT NULL,             -- see parse.Fact
  name      TEXT NOT NULL,
  qual      TEXT NOT NULL,
  line      INTEGER NOT NULL,          -- 1-based
  end_line  INTEGER NOT NULL,
  namespace TEXT NOT NULL,
  scope     INTEGER,                   -- facts.id of the enclosing function, or NULL
  arg       TEXT NOT NULL,             -- for include facts: the included file's path, once resolved
  detail    TEXT NOT NULL,
  via_macro TEXT NOT NULL,
  cond      TEXT NOT NULL DEFAULT '', -- preprocessor condition at the line (extract/preproc.py)
  targs     TEXT NOT NULL DEFAULT ''  -- call facts: explicit template arguments as written
);

CREATE TABLE operators (
  name   TEXT PRIMARY KEY,             -- add.out
  base   TEXT NOT NULL,                -- add
  line   INTEGER NOT NULL,
  kind   TEXT NOT NULL,
  delegate TEXT,                       -- structured_delegate
  record TEXT NOT NULL                 -- JSON of model.Operator
);

CREATE TABLE dispatch (
  operator TEXT NOT NULL,
  key      TEXT NOT NULL,
  kernel   TEXT NOT NULL,
  structured INTEGER NOT NULL,
  explicit INTEGER NOT NULL,
  PRIMARY KEY (operator, key)
);

-- What torch.compile's Inductor does with each op, read from the tree's Python (extract/inductor.py,
-- model.CompileFact); empty for a tree without torch/_inductor.
CREATE TABLE compile (
  op       TEXT NOT NULL,              -- the aten packet (mm, add); '' for graph.py's implicit fallback
  overload TEXT NOT NULL,              -- '' when the packet is named, else default, Tensor, ...
  role     TEXT NOT NULL,              -- lowering fallback decomposition pattern template extern select exclude implicit
  symbol   TEXT NOT NULL,
  file     TEXT NOT NULL,              -- relative to the source root
  line     INTEGER NOT NULL,           -- 1-based
  via      TEXT NOT NULL,              -- the registrar called (register_lowering, make_fallback, ...)
  registry TEXT NOT NULL,              -- decompositions: the table registered into; select: core/inductor/random
  cond     TEXT NOT NULL,              -- the if tests around the registration
  seq      INTEGER NOT NULL            -- import order
);
