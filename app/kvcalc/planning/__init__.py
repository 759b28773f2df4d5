"""The inverse question: which GPUs, how many and at what cost serve a workload (plan), and its
table and words (plan_report)."""
