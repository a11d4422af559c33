"""The conformance runner: check any implementation against the golden corpus.

* :mod:`~posenc_ref.runner.adapters`: the adapter protocol, built-in adapters, loading
* :mod:`~posenc_ref.runner.engine`: running a corpus through an adapter, statuses, the one timeout
* :mod:`~posenc_ref.runner.subprocess_adapter`: adapters in any language, as a child process
* :mod:`~posenc_ref.runner.isolate`: ``--isolate``, an in-process adapter in a child process
* :mod:`~posenc_ref.runner.diagnosis`: naming the convention mistake behind a failure
* :mod:`~posenc_ref.runner.expectations`: an implementation's declared deviations
* :mod:`~posenc_ref.runner.report`: terminal, JSON, JUnit and Markdown reports
* :mod:`~posenc_ref.runner.mutants`: the catalogue of known-bad implementations
* :mod:`~posenc_ref.runner.plugin`: the pytest plugin (``--posenc-adapter``)
"""
