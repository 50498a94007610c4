"""atenmap.names: the one namespace cleaner and template stripper."""
from __future__ import annotations

import pytest

from atenmap.names import clean_namespace, split_template_args, strip_templates


@pytest.mark.parametrize(
    "ns, clean",
    [
        ("at::native", "at::native"),
        ("at::native::CPU_CAPABILITY", "at::native"),
        ("at::native::DEFAULT", "at::native"),
        ("at::native::AVX2", "at::native"),
        ("at::native::AVX512", "at::native"),
        ("at::native::(anonymous namespace)", "at::native"),
        ("at::native::detail", "at::native"),
        ("at::native::(anonymous namespace)::CPU_CAPABILITY::add_kernel", "at::native::add_kernel"),
        ("::at::native::", "at::native"),
        ("", ""),
        ("at::cuda::blas", "at::cuda::blas"),
        ("at::native::DEFAULT_impl", "at::native::DEFAULT_impl"),  # whole components only
    ],
)
def test_clean_namespace(ns, clean):
    assert clean_namespace(ns) == clean


def test_strip_templates_keeps_operators_and_reads_unnamed():
    assert strip_templates("at::native::gemm<float>") == "at::native::gemm"
    assert strip_templates("Foo<A<B>>::operator()") == "Foo::operator()"
    assert strip_templates("operator<<") == "operator<<"
    assert strip_templates("at::native::<unnamed>::f<int>") == "at::native::(anonymous namespace)::f"
    assert strip_templates("at::native::cut<float, Foo<") == "at::native::cut"


def test_split_template_args():
    assert split_template_args("<4, Foo<a, b>, std::array<char*, 3ul> >") == ["4", "Foo<a, b>", "std::array<char*, 3ul>"]
    assert split_template_args("") == []
