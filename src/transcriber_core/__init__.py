"""transcriber_core: the pure domain of transcriber.

Entities, the job state machine and its one transition function, retry and
lease policy, the ports, and the pipeline steps and worker loop written over
those ports. Imports only the standard library, attrs and cattrs.
"""
