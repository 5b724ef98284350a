SELECT turn_id, task_session_id, tool_call_id, observed_at >= $1::timestamp, observed_at FROM task_session_subagents
