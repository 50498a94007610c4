"""Note [Library calls in device code] (resolve/devicecode.py): which calls sit in a kernel's code."""
from __future__ import annotations

from atenmap.resolve.devicecode import call_in_device_code, in_device_code


def test_a_call_in_a_device_lambda_is_device_code():
    text = b"""void unpack(TensorIterator& iter) {
  auto loop = [=]C10_DEVICE(const int idx) {
    for (int64_t i = 0; i < n; ++i) {
      thrust::swap(a[i], b[i]);"""
    assert in_device_code(text)


def test_a_call_after_the_lambda_closes_is_host_code():
    text = b"""void sort(Tensor& t) {
  auto loop = [=] GPU_LAMBDA (int i) { return i; };
  thrust::sort(policy, begin, end);"""
    assert not in_device_code(text)


def test_device_function_and_host_lambda():
    assert in_device_code(b"__device__ void f(int* p) {\n  if (p) {\n    thrust::swap(p[0], p[1]);")
    assert not in_device_code(b"void f() {\n  auto g = [&](int i) {\n    cub::DeviceScan::InclusiveSum(ws, n);")


def test_braces_and_words_in_comments_and_strings_do_not_count():
    text = b"""void f() {
  // a C10_DEVICE lambda { would be here
  const char* s = "__device__ {";
  thrust::sort(policy, b, e);"""
    assert not in_device_code(text)


def test_lines_as_a_file_gives_them():
    lines = [b"void f() {", b"  auto l = [=]C10_DEVICE(int i) {", b"    thrust::swap(x, y);", b"  };", b"}"]
    assert call_in_device_code(lines, 1, 3)
    assert not call_in_device_code(lines, 1, 5)
    assert not call_in_device_code({1: "void f() {"}, 1, 3)  # a bundle's quotes: not read
