"""One configuration request, built (build.py: the model, the hardware, the setup and layout)
and evaluated (evaluate.py: its memory and speed) — below the API, so `estimate` and
`calibrate` (optimizer.calibrate) share exactly the same configuration."""
