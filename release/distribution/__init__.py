"""What a distribution is made of, read and written: the wheel archive (read safely,
``archive``; written reproducibly, ``wheel``), the .dist-info files and core metadata, the
build record, the SBOM, variant wheels and the source distribution."""
