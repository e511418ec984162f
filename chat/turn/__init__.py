"""One chat turn: from the user's message to the saved reply (SPEC §3).

How a turn runs. `runner.start_turn` begins it: `agent.Turn.begin` calls `transactions.turn_start` (or
`turn_retry_start`), one transaction that checks the user's access and rates, takes the conversation's
lock as a lease and a run slot, and saves the user's message with an empty reply; a refused turn writes
nothing. The runner then runs the turn in a task of its own, owned by the conversation, not by the
connection that started it. Each step of the turn builds the model input (`model_input`: the system
prompt, the context providers' blocks, the stored agent state, the new message), fits it to the context
budget (`context_budget`; when it would not fit, `compaction` plans a cut (`cut`), has the oldest part
summarized (`summary`) and applies it), waits for the provider in its queue (chat.model_queue), streams
the reply under the turn's deadline (`deadlines`) and runs the tools it asks for. Every event goes to
the runner's listeners (the SSE response) and, through the turn's fan-out (`fanout`), to every open page
of the conversation in any process (`pages`). While it runs, one heartbeat per process renews the
leases of its turns and saves their text so far (`leases`), which is also how a Stop or a lost lease
reaches the turn. However it ends, `transactions.turn_finish` saves the reply and the new agent state
once, releases the lock and, after commit, fires the post-turn hook; a turn whose process died is closed
the same way by the recovery sweep (`leases.turns_recover`), which tells a dead owner from a live one by
the process identity (`process`).

Where a turn's state lives:
- in the database: the user's message and the reply (`Message`: the reply is "streaming" while it runs,
  its text saved about once a second, then "complete", "error" or "interrupted"); what the model sees
  (`AgentState.context`, with its version, summary bookkeeping, learned window and token calibration);
  the lease and the Stop flag on the conversation (`Conversation.lock_token`, `lock_expires_at`,
  `lock_owner`, `stop_requested`); one `TurnStart` row per turn for the rate limits; the provider
  queue's tickets (`ProviderTicket`, chat.model_queue);
- in this process: the running turns by conversation (`registry.running_turns`), each a
  `runner.RunningTurn` (its task, its listeners, the text the heartbeat last saved) around an
  `agent.Turn` (the text and model items so far, the budget); each turn's fan-out (`fanout.Fanout`: text
  not yet sent, messages queued for the pages) and whether the channel layer is away; this process's
  pages by conversation (`pages`); one heartbeat task per event loop and the recovery sweep (`runner`);
  the process's identity (`process`).

Modules import what they use from each other directly; this package imports nothing.
"""
