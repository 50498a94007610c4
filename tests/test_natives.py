"""Note [Native overload selection] (resolve/natives.py) and Note [Parameter kinds]
(extract/definitions.py): which C++ definitions of a native name the wrapper of an operator calls."""
from __future__ import annotations

from atenmap.extract import parse
from atenmap.extract.definitions import param_kind
from atenmap.model import Location, Operator, OperatorName
from atenmap.resolve.natives import callable_natives, schema_kinds
from atenmap.store import FactRow

SRC = b"""\
namespace at::native {
Tensor repeat_interleave_symint(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                                std::optional<SymInt> output_size) { return self; }
Tensor repeat_interleave_symint(const Tensor& self, c10::SymInt repeats, std::optional<int64_t> dim_opt,
                                std::optional<SymInt> output_size) { return self; }
Tensor& fill_(Tensor& self, const Scalar& value) { return self; }
Tensor& fill_(Tensor& self, const Tensor& value) { return self; }
}
"""


def _rows(name: str) -> list[FactRow]:
    _, facts = parse.extract_file(SRC, "cpp")
    return [FactRow(i, f.kind, f.name, f.qual, "aten/src/ATen/native/X.cpp", f.line, f.end_line, f.namespace,
                    None, f.arg, f.detail, "", "", "", False)
            for i, f in enumerate(facts) if f.kind == "function" and f.name == name]


def _op(schema: str) -> Operator:
    return Operator(OperatorName(schema.split("(", 1)[0]), schema, Location("native_functions.yaml", 1))


def test_kinds_of_cpp_parameter_types_and_schema_arguments():
    kinds = {"const Tensor": "T", "c10::SymInt": "I", "std::optional<int64_t>": "O", "at::IntArrayRef": "L",
             "const c10::List<std::optional<Tensor>>": "L", "at::OptionalIntArrayRef": "O",
             "const at::Scalar": "S", "at::ScalarType": "E", "double": "F", "bool": "B", "c10::string_view": "?"}
    assert {t: param_kind(t) for t in kinds} == kinds
    assert schema_kinds("repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, "
                        "SymInt? output_size=None) -> Tensor") == "TIOO"
    assert schema_kinds("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor") == "TLTB"
    assert schema_kinds("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)"
                        " -> Tensor") == "TOBO"


def test_the_overload_whose_parameter_kinds_fit_the_schema():
    rows = _rows("repeat_interleave_symint")
    assert len(rows) == 2 and all("types=" in r.arg for r in rows)
    scalar = _op("repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor")
    tensor = _op("repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor")
    assert [r.line for r in callable_natives(rows, scalar)] == [4]
    assert [r.line for r in callable_natives(rows, tensor)] == [2]
    fills = _rows("fill_")
    assert [r.line for r in callable_natives(fills, _op("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)"))] == [6]
    # kinds that tell nothing apart keep every overload of the right arity
    assert len(callable_natives(fills, _op("fill_.x(Tensor(a!) self, Dimname value) -> Tensor(a!)"))) == 2
