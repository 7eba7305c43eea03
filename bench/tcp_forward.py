"""A TCP forwarder: every connection to LISTEN is joined to a new one to TARGET, bytes copied both ways until either
side closes. The multi-host drill reaches the PostgreSQL of the root network namespace through it, from hosts that
see only the bridge.

    python bench/tcp_forward.py LISTEN_HOST:PORT TARGET_HOST:PORT
"""

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(listen: str, target: str) -> None:
    target_host, target_port = target.rsplit(":", 1)

    async def join(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, int(target_port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(join, host, int(port), reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
