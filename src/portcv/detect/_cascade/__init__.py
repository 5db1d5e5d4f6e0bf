"""OpenCV's cascades (Haar and LBP): the XML loader (``_xml.py``), the detector and its cascade
lookup by name (``_detector.py``), the scan that drives the kernels (``_scan.py``), the portable
stage kernels (``_cascade.py``) and their CuPy overrides (``_cascade_cuda.py`` and its ``.cu``)."""
