"""ESAC-GI: generators, answer normalisers, constraint checks, judge verdicts, rubric checks and GI verify."""
