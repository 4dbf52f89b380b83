// The worker thread of pglite-worker.ts: opens the database, says so, and stays (its port is listened to).
import { parentPort } from 'node:worker_threads'
import './open-pglite.ts'

parentPort?.on('message', () => {})
parentPort?.postMessage('ready')
