"""The live recorder's device events (trace/profrec.py): a record_function range's copy on the GPU
track is no device work. On an H100 with torch 2.11, Inductor's `## Call CompiledFxGraph <hash> ##`
range came back as a "kernel" holding 99 % of the summary's device time: that torch's
`activity_type()` is a number, so only `is_user_annotation()` tells it apart."""
from __future__ import annotations

from atenmap.trace.profrec import _kineto_events


class _Event:
    """What torch's profiler results give per event (the methods _kineto_events calls)."""

    def __init__(self, name, device, annotation=False, activity=3):
        self._name, self._device, self._annotation, self._activity = name, device, annotation, activity

    def name(self): return self._name
    def device_type(self): return f"DeviceType.{self._device}"
    def activity_type(self): return self._activity
    def is_user_annotation(self): return self._annotation
    def linked_correlation_id(self): return 7
    def correlation_id(self): return 8
    def duration_ns(self): return 1000
    def device_index(self): return 0
    def start_ns(self): return 0
    def dtypes(self): return []


class _Results:
    def __init__(self, events): self._events = events
    def events(self): return self._events


def test_a_range_s_copy_on_the_gpu_track_is_no_device_event():
    events = [_Event("triton_poi_fused_gelu_0", "CUDA"),
              _Event("## Call CompiledFxGraph fcqum4lnubf7 ##", "CUDA", annotation=True)]
    _types, device = _kineto_events(_Results(events))
    assert [d.name for d in device] == ["triton_poi_fused_gelu_0"]
