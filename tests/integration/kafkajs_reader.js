// A kafkajs consumer group member reading through the daemon (serve --upstream):
//   node kafkajs_reader.js BOOTSTRAP GROUP TOPIC COUNT
// Reads from the earliest offset until COUNT records, commits, prints
// "read PARTITION:OFFSET" per record and "done N", and leaves the group.
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, group, topic, count] = process.argv.slice(2);
  const wanted = parseInt(count, 10);
  const kafka = new Kafka({ brokers: [bootstrap], clientId: "kafkajs-reader", logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let read = 0;
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      for (const message of batch.messages) {
        console.log(`read ${batch.partition}:${message.offset}`);
        resolveOffset(message.offset);
        read += 1;
      }
      const last = batch.messages[batch.messages.length - 1];
      if (last) {
        await consumer.commitOffsets([
          { topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() },
        ]);
      }
      await heartbeat();
      if (read >= wanted) finish();
    },
  });
  const timer = setTimeout(() => finish(), 90000);
  await finished;
  clearTimeout(timer);
  console.log(`done ${read}`);
  await consumer.disconnect();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
