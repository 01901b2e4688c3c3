#!/usr/bin/env python3
"""Benchmark baseline (SPEC 10): LangChain's trim_messages over a dataset, one line at a
time, with the approximate token counter — what a dataset builder would write with
langchain-core: read the line, convert the messages, trim to a budget, write them back."""
import json
import sys

from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages
from langchain_core.messages.utils import count_tokens_approximately

budget = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in f:
        if not line.strip():
            continue
        row = json.loads(line)
        messages = convert_to_messages(row["messages"])
        kept = trim_messages(messages, max_tokens=budget, token_counter=count_tokens_approximately,
                             strategy="last", include_system=True, start_on="human", allow_partial=False)
        row["messages"] = convert_to_openai_messages(kept)
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
