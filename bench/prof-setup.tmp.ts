import postgres from 'postgres';
import { insertOrders } from '../bench/sections/export.js';
import { migrate, openDatabase } from '../src/db/index.js';

const admin = postgres('postgres://root@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} });
await admin.unsafe('drop database if exists tb_reports_prof');
await admin.unsafe('create database tb_reports_prof');
await admin.end();
const url = 'postgres://root@127.0.0.1:5432/tb_reports_prof';
const db = await openDatabase({ url, maxConnections: 1 });
await migrate(db);
await db.close();
await insertOrders(url, 1000000);
console.log('ready');
