; Member calls that may be m.impl("op", fn) (extract/calls.py, call_fact), for a file whose
; other calls are not kept (parse.py, calls_too=False: the generated autograd files). The same
; captures as the call pattern of calls.scm, for the member calls whose text holds "impl".
(call_expression
  function: (field_expression) @name
  arguments: (argument_list) @args
  (#match? @name "impl")) @reference.call
