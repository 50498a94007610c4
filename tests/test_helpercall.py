"""Note [A helper a condition calls] (resolve/helpercall.py): a boolean helper of declarations and
``if (c) return true/false;`` statements, read with the ranks and sizes its call passes. The helper
texts below are written for these tests (the shape of the pattern, not PyTorch's code)."""
from __future__ import annotations

import pytest

from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.helpercall import Known, helper_value, read_locals

PICK = """static bool pick(const Tensor& a, const Tensor& b, bool flag) {
  // the larger first
  const auto a_larger = a.dim() >= b.dim();
  const auto big = a_larger ? MaybeOwned<Tensor>::borrowed(a) : MaybeOwned<Tensor>::owned(b.mT());
  const int64_t big_dim = big->dim();
  const auto small_dim = a_larger ? b.dim() : a.dim();
  if (!(big_dim >= 3 && small_dim <= 2)) {
    return false;
  }
  bool small_grad = a_larger ? b.requires_grad() : a.requires_grad();
  if (small_grad && !flag) {
    return true;
  }
  if (a.dim() == 2) {
    return false;
  }
  for (int64_t i = 0; i < big_dim - 2; ++i) {
    if (big->strides()[i] != 1) {
      return false;
    }
  }
  return true;
}"""


def caller(**shapes) -> Known:
    sizes = {n: tuple(s) for n, s in shapes.items()}
    return Known(CallFacts(device="CPU"), ranks={n: len(s) for n, s in sizes.items()}, sizes=sizes)


@pytest.mark.parametrize("a,b,flag,want", [
    ((2, 3, 4), (4, 5), "false", True),    # folded: the smaller requires grad, no flag
    ((2, 3, 4), (2, 4, 5), "false", False),  # both 3-D: the first return
    ((3, 4), (2, 4, 5), "false", True),    # the larger is the second (its mT keeps the rank)
    ((3, 4), (4, 5), "false", False),
])
def test_a_helper_is_read_with_the_ranks_its_call_passes(a, b, flag, want):
    k = caller(x=a, y=b)
    k.values["f"] = flag
    assert helper_value(PICK, ["x", "y", "f"], k) is want


def test_a_value_the_call_does_not_give_stays_undecided():
    # the flag unknown: `small_grad && !flag` is open, and the returns after it may give false (the
    # loop's return) or true: not decided, never guessed
    assert helper_value(PICK, ["x", "y", "f"], caller(x=(2, 3, 4), y=(4, 5))) is None
    # a rank not given: nothing is read
    k = caller(y=(4, 5))
    k.values["f"] = "false"
    assert helper_value(PICK, ["x", "y", "f"], k) is None
    # the wrong number of arguments
    assert helper_value(PICK, ["x", "y"], caller(x=(2, 3, 4), y=(4, 5))) is None


def test_locals_the_ranks_choose_and_leading_sizes():
    body = """{
  at::Tensor out, unused;
  const bool has_out = unused.defined();
  const auto swap = b.dim() > a.dim();
  const auto t2 = !swap ? MaybeOwned<Tensor>::borrowed(b) : MaybeOwned<Tensor>::owned(a.t());
  auto lead_a = a.sizes().slice(0, std::max<int64_t>(a.dim() - 2, 0LL));
  const IntArrayRef lead_b(b.sizes().data(), 1);
}"""
    k = read_locals(caller(a=(3, 4), b=(2, 4, 5)), body)
    assert k.values["has_out"] == "false" and k.values["swap"] == "true"
    assert k.ranks["t2"] == 2 and k.sizes["t2"] == (4, 3)  # a.t()
    assert k.rewrite("lead_b[0] != 2") == "false"
    assert k.truth("has_out || t2->dim() == 3") is False
    assert k.shape_of("b.squeeze(0)") == (2, 4, 5) and caller(c=(1, 3, 4)).shape_of("c.squeeze(0)") == (3, 4)


def test_a_local_assigned_again_is_not_read():
    text = """static bool again(const Tensor& a) {
  bool small = a.dim() <= 2;
  small = other_check(a);
  if (small) return true;
  return false;
}"""
    assert helper_value(text, ["x"], caller(x=(3, 4))) is None


@pytest.mark.parametrize("change", ["while (d-- > 3) {\n  }", "shrink(d);", "if (++d > 9) {\n    log(d);\n  }"])
def test_a_local_changed_by_a_loop_head_or_a_call_is_not_decided(change):
    """A local a loop's condition or a call by reference may change is not its declared value: the
    helper's value is not decided from it (never guessed)."""
    text = "static bool h(const Tensor& t) {\n  int64_t d = t.dim();\n  " + change + \
           "\n  if (d == 4) {\n    return true;\n  }\n  return false;\n}"
    assert helper_value(text, ["a"], caller(a=[2, 3, 4, 5])) is None
    plain = text.replace(change, "")
    assert helper_value(plain, ["a"], caller(a=[2, 3, 4, 5])) is True


@pytest.mark.parametrize("body", [
    "{\n  int64_t n = a.dim();\n  n++;\n}",
    "{\n  int64_t n = a.dim();\n  --n;\n}",
    "{\n  if (c) {\n    const auto n = a.dim();\n  } else {\n    const int64_t n = 2;\n  }\n}",
])
def test_a_local_incremented_or_declared_in_two_branches_is_not_known(body):
    """read_locals: a local changed by ``++``/``--`` after its declaration, or declared in two
    branches, has no one value (the later branch's was taken as the value)."""
    assert "n" not in read_locals(caller(a=[2, 3, 4, 5]), body).values
    assert read_locals(caller(a=[2, 3, 4, 5]), "{\n  const int64_t n = a.dim();\n}").values["n"] == "4"
