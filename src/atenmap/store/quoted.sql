-- What a source tree answers by reading its files, kept in the bundled index (which has no files):
-- see Note [What the bundle quotes] in source/bundle.py. Only scripts/build_bundle.py creates
-- these tables; a tree's own index never has them.
CREATE TABLE IF NOT EXISTS quoted_branches (  -- --why: the branches around the call sites of one file (resolve/why.py)
    file   TEXT NOT NULL,    -- as the bundle names it (<torchgen>/... for generated files)
    branches TEXT NOT NULL,  -- JSON list of [kind, text, line, args]: kind if else return ternary switch
                             -- case dispatch, or #if (the condition; line: the directive's); args: dispatch's
    sites  TEXT NOT NULL     -- JSON list of [line, callee name (<<< for a launch), [indexes into branches]]
);
CREATE TABLE IF NOT EXISTS quoted_lines (     -- --backward: the lines of torchgen's autograd files it quotes;
                                              -- MPS runs: the lines of the MPS bodies and .metal files resolve/mpsgraph.py reads
    file   TEXT NOT NULL,
    line   INTEGER NOT NULL,
    text   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quoted_text_ops (  -- --backward: Tensor arithmetic in a FunctionsManual helper
    file   TEXT NOT NULL,
    def_line INTEGER NOT NULL, -- the helper's definition line
    line   INTEGER NOT NULL,   -- the arithmetic's line
    base   TEXT NOT NULL,      -- the operator it is (mul, div, add, sub)
    written TEXT NOT NULL,     -- operator*
    args   TEXT NOT NULL       -- its operands as written
);
CREATE TABLE IF NOT EXISTS quoted_python (   -- torch names: the Python functions of torch/nn/functional.py & co
    surface TEXT NOT NULL,     -- nn, torch, Tensor, linalg, special, fft (extract/pyfuncs.py MODULES)
    name   TEXT NOT NULL,
    record TEXT NOT NULL       -- PyFunction.to_dict() as JSON: place, the calls of its body, or the binding it aliases
);
CREATE TABLE IF NOT EXISTS quoted_derivatives ( -- --backward: tools/autograd/derivatives.yaml's entries
    op     TEXT NOT NULL,
    record TEXT NOT NULL       -- DerivativeEntry.to_dict() as JSON
);
CREATE TABLE IF NOT EXISTS quoted_bodies (    -- MPS runs: where the MPS files' function bodies end (resolve/mpsgraph.py)
    file   TEXT NOT NULL,
    first  INTEGER NOT NULL,   -- the index's span of the function (function_spans)
    last   INTEGER NOT NULL,
    end_line INTEGER NOT NULL  -- the line of the brace closing its body
);
CREATE TABLE IF NOT EXISTS quoted_runs (     -- the runs block: what each key of an operator runs, as the tree ranks it
    op     TEXT NOT NULL,      -- the operator (add.out)
    key    TEXT NOT NULL,      -- the chain's key (CUDA; a composite-only op's CPU/CUDA too)
    platform TEXT NOT NULL,    -- cuda or rocm (Note [The ROCm side of #if] in resolve/conditions.py)
    runs   TEXT NOT NULL       -- JSON list, main path first: [role, name, file, line, generated, setup, via,
                               -- when, when with --why (null: the same)], when as [[kind, text, file, line], ...]
);
