"""The pytest entry of this repository. Everything else of the front end (options, markers,
parametrization, the ``bench`` fixture, run records) is evalsuite's pytest plugin,
:mod:`evalsuite.pytest_plugin`, which an installed evalsuite registers by itself; naming it
here keeps it on where plugin autoloading is turned off (PYTEST_DISABLE_PLUGIN_AUTOLOAD)."""

pytest_plugins = ("evalsuite.pytest_plugin",)
