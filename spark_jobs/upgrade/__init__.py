"""``upgrade plan | migrate``: change a running job without replaying its history (issue 26).

``plan`` reads what a checkpoint and its table hold (:mod:`.recorded`) and what the job declares
now (:mod:`.declared`), and gives one verdict per difference (:mod:`.verdicts`). ``migrate``
accepts the changes whose verdict is ``compatible`` under the job's lock, after a snapshot
(:mod:`.migrate`). docs/upgrades.md explains the verdicts and exit codes.
"""
