"""The memory judge: the model call that reads a batch of the user's messages beside the memories it is
shown and answers with operations (add, update, retract, clear).

- `request`: what it is shown (the prompt, the memories, the numbered messages), rendered and read back;
- `call`: how it is asked (model, schema, temperature, limits), the same for extraction and evaluation;
- `answer`: its answer, parsed strictly;
- `content`: what text it may write (storable, never a secret or an instruction);
- `validation`: each operation checked against the memories as they are at commit.

The data shapes are importable from here; everything in this package is pure (no database).
"""

from memory.extraction.judge.answer import OPS, MalformedOutput, Operation, parse_output
from memory.extraction.judge.request import (
    CONVERSATION_BREAK,
    PROJECT_NOTE,
    ActiveMemory,
    JudgeInput,
    PendingMessage,
    judge_prompt,
    render_input,
)

__all__ = [
    "CONVERSATION_BREAK",
    "OPS",
    "PROJECT_NOTE",
    "ActiveMemory",
    "JudgeInput",
    "MalformedOutput",
    "Operation",
    "PendingMessage",
    "judge_prompt",
    "parse_output",
    "render_input",
]
