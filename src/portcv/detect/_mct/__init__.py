"""The MCT face detector of Tek's thesis: the MCT kernels (``_mct.py``: the transform and the
stage sums) with their CuPy and Pallas overrides (``_mct_cuda.py`` and its ``.cu``,
``_mct_pallas.py``), the cascade file (``_cascade_file.py``), the detector and its scan
(``_detector.py``), and the training, apart from the runtime path (``_train.py``)."""
