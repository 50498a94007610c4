-- Secondary indexes, created after the bulk load.
CREATE INDEX IF NOT EXISTS facts_name ON facts(name, kind);
CREATE INDEX IF NOT EXISTS facts_scope ON facts(scope);
CREATE INDEX IF NOT EXISTS facts_file ON facts(file, line);
CREATE INDEX IF NOT EXISTS facts_kind ON facts(kind);
-- Store.stub_names (every chain's DispatchStub names): ~500 names, read without their rows
CREATE INDEX IF NOT EXISTS facts_stub ON facts(name) WHERE kind IN ('declare_dispatch', 'register_dispatch');
CREATE INDEX IF NOT EXISTS dispatch_kernel ON dispatch(kernel);
CREATE INDEX IF NOT EXISTS operators_base ON operators(base);
CREATE INDEX IF NOT EXISTS operators_delegate ON operators(delegate);
-- operator_names (every chain's name table) in yaml order from this index alone: the table's scan
-- reads every JSON record and sorts, 2-5 ms of a warm query
CREATE INDEX IF NOT EXISTS operators_line ON operators(line, name);
CREATE INDEX IF NOT EXISTS compile_op ON compile(op);
