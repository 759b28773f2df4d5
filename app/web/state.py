"""What the page's modules share: the model a config.json gave, a pasted log's reading, the
pins, and the last computation. One place, so no module reaches into another's globals."""

config = None           # the parsed config.json, when the model comes from one
config_error = None     # why the text in the config box is not a config (an InputError)
pins = []               # each pin's link fragment, in pin order
unit = "gib"            # the unit the figures were last written in
stale = False           # inputs in error: the figures shown are the last valid ones
valid_once = False      # some inputs have computed since the page opened
computed = None         # (scenario, evaluation) of the last valid inputs
texts = None           # the last valid inputs' page texts (kvcalc.reports.report.page_texts), for a fold opened
current = None          # the last valid inputs' to_json column, for the comparison
evaluation = None       # the last valid inputs' Evaluation, for the log's figures beside it
failed = None           # the pasted log's failed start (kvcalc.inputs.failed_start), while it is in use
raw = None              # the last inputs as read from the form (what the fixes change)
reading = None          # the pasted start-up log's Reading (kvcalc.inputs.startup_log), while it is in use
plan_generation = 0     # the latest plan asked for (web.plan_view): an older one still running stops
opened = []             # the page's sections open (web.sections), in the page's order, for the link
plan_seen = False       # the plan's section has been on screen: from then on every update plans
