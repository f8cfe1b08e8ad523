"""Reading the flight recorder's files back: a recording's rows and its sidecar, read as untrusted input.

The recorder (push.recorder) writes them; the engine's replay (engine.recording)
and the report (report.recording) read them through this package.
"""
