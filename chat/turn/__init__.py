"""One chat turn: from the user's message to the saved reply (SPEC §3).

How a turn runs. `runner.start_turn` begins it: `agent.Turn.begin` calls `transactions.turn_start` (or
`turn_retry_start`), one transaction that checks the user's access and rates, takes the conversation's
lock as a lease and a run slot, and saves the user's message with an empty reply; a refused turn writes
nothing. The runner then runs the turn in a task of its own, owned by the conversation, not by the
connection that started it. Each step of the turn builds the model input (`model_input`: the system
prompt, the context providers' blocks, the stored agent state, the new message), fits it to the context
budget (`context_budget`; when it would not fit, `compaction` plans a cut (`cut`), has the oldest part
summarized (`summary`) and applies it), waits for the provider in its queue (chat.model_queue), streams
the reply under the turn's time limit (`clock`, on chat.llm.deadlines) and runs the tools it asks for
(`tool_calls`). What the calls cost is counted as they go (`metered`) and reported once the reply is
saved. Every event (`events.TurnEvent`) goes to the runner's listeners (the SSE response) and, through
the turn's fan-out (`fanout`), to every open page of the conversation in any process (`pages`). While it
runs, one heartbeat per event loop (`heartbeat`) renews the leases of its turns and saves their text so
far (`leases`), which is also how a Stop or a lost lease reaches the turn. However it ends,
`transactions.turn_finish` saves the reply and the new agent state once, releases the lock and, after
commit, fires the post-turn hook; a turn whose process died is closed the same way by the recovery sweep
(`leases.turns_recover`, run by the runner's `lifespan`), which tells a dead owner from a live one by the
process identity (chat.process).

Where a turn's state lives:
- in the database: the user's message and the reply (`Message`: the reply is "streaming" while it runs,
  its text saved about once a second, then "complete", "error" or "interrupted"; a regenerated reply's
  earlier versions, chat.versions); what the model sees (`AgentState.context`, with its version, summary
  bookkeeping, learned window and token calibration); the lease and the Stop flag on the conversation
  (`Conversation.lock_token`, `lock_expires_at`, `lock_owner`, `stop_requested`); one `TurnStart` row per
  turn for the rate limits; the provider queue's tickets (`ProviderTicket`, chat.model_queue); the search
  index's rows for both messages (`SearchEntry`, chat.search.index); the usage rows the finished turn
  reports (the usage app, through chat.llm.metering);
- in the cache (Redis when configured): each model's token calibration (chat.llm.server_facts);
- in this process: the running turns by conversation (`registry.running_turns`), each a
  `runner.RunningTurn` (its task, its listeners, the text the heartbeat last saved) around an
  `agent.Turn` (the text and model items so far, the budget, the meter); each turn's fan-out
  (`fanout.Fanout`: text not yet sent, messages queued for the pages); this process's pages by
  conversation and the replies that ran here (`pages._pages`, `pages._ran_here`, `pages._lookups`); one
  heartbeat task per event loop (`heartbeat._hearts`); the recovery sweep's task (`runner._sweeper`);
  whether the channel layer is away (chat.push); the window each server stated or its probe found
  (chat.llm.server_facts, chat.llm.window_probe); the process's identity (chat.process);
- in the running task's context: the calls being counted (chat.llm.metering) and the callback that
  announces the turn's start once its request is written (chat.llm.written).

Modules import what they use from each other directly, and never in a circle (tests/test_layout.py); the
turn's base modules sit below it (chat.process, chat.llm.tokens, chat.llm.deadlines), and this package's
`__init__` imports nothing.
"""
