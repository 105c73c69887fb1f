"""Reliability: crashes, concurrency, hostile input, isolation probes and tampering (short runs; long ones in bench/)."""
